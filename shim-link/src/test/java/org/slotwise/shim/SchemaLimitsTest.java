package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Java binds every message within the schema's limits, read from the schema
 * itself: for every field of every definition that has a limit (minimum,
 * maximum, minLength, maxLength; on the field, its array's items or its map's
 * values), a message with the field at the limit binds and one with the
 * field one past it is refused, naming the field. The cases are generated
 * from schema.json, so a limit added there is tested here without a new line.
 */
class SchemaLimitsTest {
  private static final Path SCHEMA = Paths.get("..", "python", "slotwise", "protocol", "schema.json");
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private static JsonNode schema() throws IOException {
    return JSON.readTree(SCHEMA.toFile());
  }

  private static Class<?> recordOf(String name) throws ClassNotFoundException {
    return Class.forName(Messages.class.getName() + "$" + name);
  }

  // ------------------------------------------------------ minimal messages

  /** The schema of {@code spec} with $ref to a non-object and nullable forms followed. */
  private static JsonNode real(JsonNode defs, JsonNode spec) {
    if (spec.has("$ref")) {
      JsonNode target = defs.get(spec.get("$ref").asText().replaceAll(".*/", ""));
      return "object".equals(target.path("type").asText()) ? spec : real(defs, target);
    }
    if (spec.has("anyOf")) {
      for (JsonNode o : spec.get("anyOf")) {
        if (!"null".equals(o.path("type").asText())) {
          return real(defs, o);
        }
      }
    }
    return spec;
  }

  private static String kind(JsonNode spec) {
    JsonNode t = spec.path("type");
    if (t.isArray()) {
      for (JsonNode k : t) {
        if (!"null".equals(k.asText())) {
          return k.asText();
        }
      }
    }
    return t.asText();
  }

  /** The smallest valid value of {@code spec}: required fields only, each at its smallest. */
  private static JsonNode minimal(JsonNode defs, JsonNode spec) {
    spec = real(defs, spec);
    if (spec.has("$ref")) {
      return minimal(defs, defs.get(spec.get("$ref").asText().replaceAll(".*/", "")));
    }
    if (spec.has("enum")) {
      return spec.get("enum").get(0);
    }
    switch (kind(spec)) {
      case "integer":
        return F.numberNode(BigInteger.valueOf(Math.max(0, spec.path("minimum").asLong(0))));
      case "number":
        return F.numberNode(Math.max(0, spec.path("minimum").asDouble(0)));
      case "string":
        return F.textNode("x".repeat(Math.max(1, spec.path("minLength").asInt(0))));
      case "boolean":
        return F.booleanNode(false);
      case "array":
        return F.arrayNode();
      case "object": {
        ObjectNode o = F.objectNode();
        for (JsonNode r : spec.path("required")) {
          o.set(r.asText(), minimal(defs, spec.path("properties").get(r.asText())));
        }
        if (spec.has("oneOf")) {
          String first = spec.get("oneOf").get(0).get("required").get(0).asText();
          o.set(first, minimal(defs, spec.path("properties").get(first)));
        }
        return o;
      }
      default:
        throw new AssertionError("no minimal value for " + spec);
    }
  }

  // ------------------------------------------------------------ the edges

  /** A value of a field: valid or not, and what it is. */
  private record Edge(JsonNode value, boolean valid, String what) {}

  /** The edges of a scalar's limits: at each limit (valid) and one past it (refused). */
  private static List<Edge> scalarEdges(JsonNode s) {
    List<Edge> out = new ArrayList<>();
    String kind = kind(s);
    if (kind.equals("integer")) {
      if (s.has("minimum")) {
        BigInteger min = s.get("minimum").bigIntegerValue();
        out.add(new Edge(F.numberNode(min), true, "at its minimum " + min));
        out.add(new Edge(F.numberNode(min.subtract(BigInteger.ONE)), false, "one below its minimum"));
      }
      if (s.has("maximum")) {
        BigInteger max = s.get("maximum").bigIntegerValue();
        out.add(new Edge(F.numberNode(max), true, "at its maximum " + max));
        out.add(new Edge(F.numberNode(max.add(BigInteger.ONE)), false, "one above its maximum"));
      }
    } else if (kind.equals("number")) {
      if (s.has("minimum")) {
        double min = s.get("minimum").asDouble();
        out.add(new Edge(F.numberNode(min), true, "at its minimum " + min));
        out.add(new Edge(F.numberNode(min - 1), false, "below its minimum"));
      }
      if (s.has("maximum")) {
        double max = s.get("maximum").asDouble();
        out.add(new Edge(F.numberNode(max), true, "at its maximum " + max));
        out.add(new Edge(F.numberNode(new BigDecimal(s.get("maximum").decimalValue().toString())
            .multiply(BigDecimal.TEN)), false, "above its maximum"));
      }
    } else if (kind.equals("string")) {
      if (s.has("minLength") && s.get("minLength").asInt() > 0) {
        int min = s.get("minLength").asInt();
        out.add(new Edge(F.textNode("x".repeat(min)), true, "of its minLength " + min));
        out.add(new Edge(F.textNode("x".repeat(min - 1)), false, "one shorter than its minLength"));
      }
      if (s.has("maxLength")) {
        int max = s.get("maxLength").asInt();
        out.add(new Edge(F.textNode("x".repeat(max)), true, "of its maxLength " + max));
        out.add(new Edge(F.textNode("\uD83D\uDE80".repeat(max)), true,
            "of its maxLength in characters outside the BMP (twice as many UTF-16 units)"));
        out.add(new Edge(F.textNode("x".repeat(max + 1)), false, "one longer than its maxLength"));
      }
    }
    return out;
  }

  /** The edges of a field: its own, its array's items' or its map's values'. */
  private static List<Edge> edges(JsonNode defs, JsonNode field) {
    JsonNode s = real(defs, field);
    if (s.has("$ref")) {
      return List.of(); // an object definition: its own fields are tested as its own
    }
    List<Edge> out = new ArrayList<>();
    if (kind(s).equals("array") && s.has("items")) {
      for (Edge e : edges(defs, s.get("items"))) {
        ArrayNode a = F.arrayNode().add(e.value());
        out.add(new Edge(a, e.valid(), "with an item " + e.what()));
      }
    } else if (kind(s).equals("object") && s.get("additionalProperties") instanceof ObjectNode) {
      for (Edge e : edges(defs, s.get("additionalProperties"))) {
        ObjectNode m = F.objectNode();
        m.set("h:1", e.value());
        out.add(new Edge(m, e.valid(), "with a value " + e.what()));
      }
    } else {
      out.addAll(scalarEdges(s));
    }
    return out;
  }

  @TestFactory
  Stream<DynamicTest> everyLimitedFieldBindsAtItsLimitAndIsRefusedOnePastItNamingTheField()
      throws IOException {
    JsonNode defs = schema().get("$defs");
    List<DynamicTest> tests = new ArrayList<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = defs.fields(); it.hasNext();) {
      Map.Entry<String, JsonNode> def = it.next();
      if (!"object".equals(def.getValue().path("type").asText())) {
        continue;
      }
      String name = def.getKey();
      JsonNode spec = def.getValue();
      for (Iterator<Map.Entry<String, JsonNode>> f = spec.path("properties").fields(); f.hasNext();) {
        Map.Entry<String, JsonNode> field = f.next();
        for (Edge e : edges(defs, field.getValue())) {
          String title = name + "." + field.getKey() + " " + e.what();
          tests.add(DynamicTest.dynamicTest(title, () -> {
            ObjectNode message = (ObjectNode) minimal(defs, spec);
            if (spec.has("oneOf")) { // set this field alone of its exactly-one group
              for (JsonNode alt : spec.get("oneOf")) {
                message.remove(alt.get("required").get(0).asText());
              }
            }
            message.set(field.getKey(), e.value());
            String json = JSON.writeValueAsString(message);
            Class<?> type = recordOf(name);
            if (e.valid()) {
              Object bound = PolicyLink.read(json, type);
              assertNotNull(bound);
              assertEquals(bound, PolicyLink.read(PolicyLink.write(bound), type), "round trip");
            } else {
              PolicyLink.BadMessage refused = assertThrows(PolicyLink.BadMessage.class,
                  () -> PolicyLink.read(json, type), json.length() < 200 ? json : title);
              assertTrue(refused.getMessage().startsWith(name + ": $." + field.getKey()),
                  refused.getMessage());
              assertTrue(!refused.getMessage().contains("\n") && refused.getMessage().length() < 300,
                  "one short line: " + refused.getMessage());
            }
          }));
        }
      }
    }
    assertTrue(tests.size() >= 150, tests.size() + " cases");
    return tests.stream();
  }

  // ------------------------------------------------------- named examples

  private static String assignment(String node, String priority) {
    return "{\"app\": \"application_1_0001\", \"node\": \"" + node + "\", \"priority\": " + priority
        + ", \"locality\": \"off_switch\", \"engine_id\": \"e1\"}";
  }

  @Test
  void aHeartbeatAnswerOutsideTheLimitsIsRefusedNamingTheField() {
    String ok = "{\"assign\": [" + assignment("h:1", "2147483647") + "]}";
    assertEquals(Integer.MAX_VALUE,
        PolicyLink.read(ok, Messages.HeartbeatAnswer.class).assign().get(0).priority());
    PolicyLink.BadMessage e = assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read(
        "{\"assign\": [" + assignment("h:1", "2147483648") + "]}", Messages.HeartbeatAnswer.class));
    assertEquals("HeartbeatAnswer: $.assign[0].priority: 2147483648 is above the maximum "
        + "2147483647", e.getMessage());
    e = assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read(
        "{\"assign\": [" + assignment("", "1") + "]}", Messages.HeartbeatAnswer.class));
    assertTrue(e.getMessage().startsWith("HeartbeatAnswer: $.assign[0].node: is empty"),
        e.getMessage());
    e = assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read(
        "{\"preempt\": [{\"container\": \"" + "c".repeat(1025) + "\", \"kill\": true}]}",
        Messages.HeartbeatAnswer.class));
    assertEquals("HeartbeatAnswer: $.preempt[0].container: has 1,025 characters; at most 1,024",
        e.getMessage());
  }

  @Test
  void enumsRequiredFieldsNullsAndExactlyOneAreTheSchemas() {
    assertTrue(assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read(
        "{\"assign\": [" + assignment("h:1", "1").replace("off_switch", "diagonal") + "]}",
        Messages.HeartbeatAnswer.class)).getMessage().contains("$.assign[0].locality"));
    assertTrue(assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read("{\"pid\": null}",
        Messages.Pong.class)).getMessage().startsWith("Pong: $.pid: expected integer"));
    assertTrue(assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read("{}",
        Messages.Pong.class)).getMessage().startsWith("Pong: $.pid: required"));
    assertTrue(assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read("{\"assign\": null}",
        Messages.HeartbeatAnswer.class)).getMessage().contains("$.assign: expected array"));
    String both = "{\"queue\": \"root.a\", \"reject\": \"no\"}";
    assertTrue(assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read(both,
        Messages.PlaceAnswer.class)).getMessage().contains("exactly one of queue, reject"));
    assertEquals("root.a", PolicyLink.read("{\"queue\": \"root.a\", \"reject\": null}",
        Messages.PlaceAnswer.class).queue(), "null is unset, as Python counts it");
  }

  @Test
  void numbersPastADoubleAndTrailingTextAreRefused() {
    String row = "{\"name\": \"root\", \"weight\": %s, \"min\": {}, \"fair\": {}, \"steady\": {},"
        + " \"usage\": {}, \"demand\": {}, \"running_apps\": 0, \"apps\": 0}";
    assertEquals(1e300, PolicyLink.read(String.format(row, "1e300"), Messages.QueueRow.class).weight());
    assertTrue(assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read(String.format(row, "1e400"),
        Messages.QueueRow.class)).getMessage().contains("$.weight"));
    assertTrue(assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read(String.format(row, "-0.5"),
        Messages.QueueRow.class)).getMessage().contains("$.weight: -0.5 is below the minimum 0"));
    assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read("{\"pid\": 1} {}", Messages.Pong.class));
    assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read("", Messages.Pong.class));
    assertTrue(assertThrows(PolicyLink.BadMessage.class, () -> PolicyLink.read("{\"pid\": 1.0}",
        Messages.Pong.class)).getMessage().contains("$.pid: expected integer"));
  }

  @Test
  void atMostMaxAssignPerNodeAssignmentsForOneNodeInOneAnswer() {
    int max = PolicyLink.MAX_ASSIGN_PER_NODE;
    assertEquals(1024, max, "Python's engine.MAX_ASSIGN_PER_HEARTBEAT");
    StringBuilder many = new StringBuilder("{\"assign\": [");
    for (int i = 0; i < max; i++) {
      many.append(i == 0 ? "" : ",").append(assignment("h:1", "1"));
    }
    String atMax = many + "]}";
    assertEquals(max, PolicyLink.read(atMax, Messages.HeartbeatAnswer.class).assign().size());
    String twoNodes = many + "," + assignment("h:2", "1") + "]}";
    assertEquals(max + 1, PolicyLink.read(twoNodes, Messages.HeartbeatAnswer.class).assign().size());
    String past = many + "," + assignment("h:1", "1") + "]}";
    PolicyLink.BadMessage e = assertThrows(PolicyLink.BadMessage.class,
        () -> PolicyLink.read(past, Messages.HeartbeatAnswer.class));
    assertEquals("HeartbeatAnswer: $.assign: more than 1,024 assignments for node h:1 in one "
        + "answer (1,025 in all)", e.getMessage());
  }

  /**
   * Every array of every message is bounded by its maxItems: one item more is
   * refused naming the field, before any item is looked at (so the items here
   * are nulls, and two million of them cost little). Where the bound is small
   * a message at the bound, of valid items, also binds through
   * {@link Messages#read}.
   */
  @Test
  void everyArrayIsRefusedOneItemPastItsMaxItemsAndBindsAtIt() throws Exception {
    JsonNode defs = schema().get("$defs");
    int arrays = 0;
    int atTheBound = 0;
    for (Iterator<Map.Entry<String, JsonNode>> it = defs.fields(); it.hasNext();) {
      Map.Entry<String, JsonNode> def = it.next();
      String name = def.getKey();
      JsonNode spec = def.getValue();
      for (Iterator<Map.Entry<String, JsonNode>> f = spec.path("properties").fields(); f.hasNext();) {
        Map.Entry<String, JsonNode> field = f.next();
        JsonNode fs = field.getValue();
        if (!"array".equals(kind(fs))) {
          continue;
        }
        arrays++;
        assertTrue(fs.has("maxItems"), name + "." + field.getKey() + " has no maxItems");
        int max = fs.get("maxItems").asInt();
        ObjectNode message = (ObjectNode) minimal(defs, spec);
        ArrayNode past = F.arrayNode(max + 1);
        for (int i = 0; i <= max; i++) {
          past.addNull();
        }
        message.set(field.getKey(), past);
        Messages.Violation v = assertThrows(Messages.Violation.class,
            () -> Messages.check(name, message));
        assertEquals("$." + field.getKey() + ": has " + String.format("%,d", max + 1) + " items; at most "
            + String.format("%,d", max), v.getMessage(), name);
        if (max <= 10_000) {
          JsonNode item = minimal(defs, fs.get("items"));
          ArrayNode full = message.putArray(field.getKey());
          for (int i = 0; i < max; i++) {
            full.add(item);
          }
          PolicyLink.read(JSON.writeValueAsString(message), recordOf(name));
          atTheBound++;
        }
      }
    }
    assertTrue(arrays >= 19 && atTheBound >= 3, arrays + " arrays, " + atTheBound + " bound at the limit");
  }

  // ----------------------------------------------------------- the schema

  @Test
  void theGeneratedBindingCarriesTheSchemasVersionAndBounds() throws IOException {
    assertEquals(schema().get("version").asInt(), Messages.PROTOCOL);
    assertEquals(schema().at("/$defs/Name/maxLength").asInt(), Messages.NAME_MAX);
    assertEquals(schema().at("/$defs/FallbackEpisode/properties/reason/maxLength").asInt(),
        Messages.TEXT_MAX);
  }
}
