package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

class JsonTest {

  @Test
  void writesCompactJsonWithCommasInTheRightPlaces() {
    Map<String, Integer> hosts = new LinkedHashMap<>();
    hosts.put("h1", 2);
    hosts.put("h2", 1);
    String s = new Json.Out().beginObject()
        .key("a").value(1)
        .key("b").beginArray().value("x").value(true).nul().endArray()
        .key("c").beginObject().endObject()
        .key("d").counts(hosts)
        .key("e").strings(Arrays.asList("p", "q"))
        .endObject().toString();
    assertEquals("{\"a\":1,\"b\":[\"x\",true,null],\"c\":{},\"d\":{\"h1\":2,\"h2\":1},"
        + "\"e\":[\"p\",\"q\"]}", s);
  }

  @Test
  void escapesStrings() {
    String nasty = "quote\" back\\ nl\n tab\t ctl\u0001 é";
    String s = new Json.Out().beginArray().value(nasty).endArray().toString();
    assertEquals("[\"quote\\\" back\\\\ nl\\n tab\\t ctl\\u0001 é\"]", s);
    assertEquals(nasty, ((List<?>) Json.parse(s)).get(0));
  }

  @Test
  void parsesAllValueKinds() {
    Object v = Json.parse(" {\"s\": \"x\\u0041\\/\", \"i\": -12, \"f\": 1.5e2, \"t\": true,"
        + " \"n\": null, \"l\": [1, [2]], \"o\": {\"k\": false}} ");
    Map<?, ?> m = (Map<?, ?>) v;
    assertEquals("xA/", m.get("s"));
    assertEquals(-12L, m.get("i"));
    assertEquals(150.0, m.get("f"));
    assertEquals(Boolean.TRUE, m.get("t"));
    assertTrue(m.containsKey("n"));
    assertNull(m.get("n"));
    assertEquals(Arrays.asList(1L, Arrays.asList(2L)), m.get("l"));
    assertEquals(Boolean.FALSE, ((Map<?, ?>) m.get("o")).get("k"));
  }

  @Test
  void readsPythonNonFiniteFloats() {
    List<?> l = (List<?>) Json.parse("[NaN, Infinity, -Infinity]");
    assertTrue(Double.isNaN((Double) l.get(0)));
    assertEquals(Double.POSITIVE_INFINITY, l.get(1));
    assertEquals(Double.NEGATIVE_INFINITY, l.get(2));
  }

  @Test
  void rejectsMalformedInput() {
    for (String bad : new String[] {"", "{", "[1,]", "{\"a\" 1}", "{\"a\":1}x", "tru",
        "\"abc", "[1 2]", "{1:2}", "-", "1.2.3", "\"\\q\"", null}) {
      assertThrows(IllegalArgumentException.class, () -> Json.parse(bad), String.valueOf(bad));
    }
  }

  @Test
  void refusesDeepNesting() {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < 1000; i++) {
      sb.append('[');
    }
    assertThrows(IllegalArgumentException.class, () -> Json.parse(sb.toString()));
  }
}
