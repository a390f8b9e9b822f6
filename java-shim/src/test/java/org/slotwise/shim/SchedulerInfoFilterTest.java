package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Set;
import java.util.TreeSet;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/**
 * The filter in front of YARN's GET /ws/v1/cluster/scheduler: where it goes in
 * the RM's filter list, and YARN's error shape it answers in when serve, which
 * draws the view (python/slotwise/web/rm_scheduler.py, tests/test_rm_scheduler.py),
 * cannot.
 */
class SchedulerInfoFilterTest {
  @Test
  void errorsTakeYarnsShape() throws IOException {
    JsonNode e = new ObjectMapper().readTree(SchedulerInfoFilter.error("NotAcceptableException", "why"));
    Set<String> fields = new TreeSet<>();
    e.path("RemoteException").fieldNames().forEachRemaining(fields::add);
    assertEquals(Set.of("exception", "message", "javaClassName"), fields);
    assertEquals("why", e.path("RemoteException").path("message").asText());
    assertTrue(e.path("RemoteException").path("javaClassName").asText().endsWith("NotAcceptableException"));
  }

  @Test
  void installKeepsYarnsSimpleAuthFilterWhereYarnWouldAddIt() {
    String auth = "org.apache.hadoop.yarn.server.security.http.RMAuthenticationFilterInitializer";
    String staticUser = "org.apache.hadoop.http.lib.StaticUserWebFilter";
    String mine = SchedulerInfoFilter.class.getName();
    // Hadoop's default: StaticUserWebFilter alone; YARN would put its auth filter first.
    Configuration conf = new Configuration(false);
    conf.set(SchedulerInfoFilter.INITIALIZERS, staticUser);
    SchedulerInfoFilter.install(conf);
    assertEquals(auth + "," + staticUser + "," + mine, conf.get(SchedulerInfoFilter.INITIALIZERS));
    assertEquals("simple", conf.get("hadoop.http.authentication.type"));
    // Nothing configured: as YARN, its auth filter alone, then ours.
    conf = new Configuration(false);
    SchedulerInfoFilter.install(conf);
    assertEquals(auth + "," + mine, conf.get(SchedulerInfoFilter.INITIALIZERS));
    // An operator's own list is kept as it is (YARN leaves it alone too), ours after it; twice is once.
    conf = new Configuration(false);
    conf.set(SchedulerInfoFilter.INITIALIZERS, "org.example.Sso," + staticUser);
    SchedulerInfoFilter.install(conf);
    SchedulerInfoFilter.install(conf);
    assertEquals("org.example.Sso," + staticUser + "," + mine, conf.get(SchedulerInfoFilter.INITIALIZERS));
    assertEquals(null, conf.get("hadoop.http.authentication.type"));
  }
}
