package org.slotwise.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * The Java side of the contract: every definition of the schema
 * (python/slotwise/protocol/schema.json) is a record of {@link Messages} with
 * the same fields, the same required ones and compatible types, and the
 * shared examples (the Python tests read the same files) bind both ways.
 */
class MessagesSchemaTest {
  private static final Path PROTOCOL = Paths.get("..", "python", "slotwise", "protocol");
  private static final PropertyNamingStrategies.SnakeCaseStrategy SNAKE =
      new PropertyNamingStrategies.SnakeCaseStrategy();

  private static JsonNode schema() throws IOException {
    try (InputStream in = Files.newInputStream(PROTOCOL.resolve("schema.json"))) {
      return new ObjectMapper().readTree(in);
    }
  }

  private static Class<?> recordOf(String name) throws ClassNotFoundException {
    return Class.forName(Messages.class.getName() + "$" + name);
  }

  @Test
  void theProtocolVersionIsTheSchemas() throws IOException {
    assertEquals(schema().get("version").asInt(), Messages.PROTOCOL);
  }

  @Test
  void everyObjectDefinitionIsARecordWithTheSameFieldsRequirednessAndTypes() throws Exception {
    JsonNode defs = schema().get("$defs");
    int checked = 0;
    for (Iterator<Map.Entry<String, JsonNode>> it = defs.fields(); it.hasNext();) {
      Map.Entry<String, JsonNode> def = it.next();
      if (!"object".equals(def.getValue().path("type").asText())) {
        continue;
      }
      String name = def.getKey();
      Class<?> c = recordOf(name);
      assertTrue(c.isRecord(), name + " must be a record");
      Set<String> required = new TreeSet<>();
      def.getValue().path("required").forEach(n -> required.add(n.asText()));
      Set<String> fields = new TreeSet<>();
      def.getValue().path("properties").fieldNames().forEachRemaining(fields::add);
      Set<String> components = new TreeSet<>();
      for (RecordComponent rc : c.getRecordComponents()) {
        String wire = SNAKE.translate(rc.getName());
        components.add(wire);
        JsonNode prop = def.getValue().path("properties").path(wire);
        if (prop.isMissingNode()) {
          continue;
        }
        assertEquals(required.contains(wire), rc.getAccessor().isAnnotationPresent(JsonProperty.class)
            && rc.getAccessor().getAnnotation(JsonProperty.class).required(),
            name + "." + wire + ": required in the schema iff @JsonProperty(required = true)");
        assertCompatible(defs, prop, rc.getGenericType(), name + "." + wire);
      }
      assertEquals(fields, components, name + ": the record's fields are the schema's");
      checked++;
    }
    assertTrue(checked >= 30, "checked " + checked + " definitions");
  }

  private static void assertCompatible(JsonNode defs, JsonNode prop, Type type, String where)
      throws Exception {
    Class<?> raw = type instanceof ParameterizedType
        ? (Class<?>) ((ParameterizedType) type).getRawType() : (Class<?>) type;
    if (prop.has("$ref")) {
      String ref = prop.get("$ref").asText().replaceAll(".*/", "");
      JsonNode target = defs.get(ref);
      if ("object".equals(target.path("type").asText())) {
        assertEquals(recordOf(ref), raw, where);
      } else {
        assertCompatible(defs, target, type, where);
      }
      return;
    }
    if (prop.has("anyOf")) {
      assertCompatible(defs, prop.get("anyOf").get(0), type, where);
      return;
    }
    if (prop.has("enum")) {
      List<String> values = new ArrayList<>();
      prop.get("enum").forEach(v -> values.add(v.asText()));
      if (raw.isEnum()) {
        List<String> names = new ArrayList<>();
        for (Object k : raw.getEnumConstants()) {
          names.add(raw.getField(((Enum<?>) k).name()).getAnnotation(JsonProperty.class).value());
        }
        assertEquals(values, names, where);
      } else {
        assertEquals(String.class, raw, where);
      }
      return;
    }
    JsonNode t = prop.get("type");
    boolean nullable = t.isArray();
    String kind = nullable ? t.get(0).asText() : t.asText();
    if (nullable) {
      assertTrue(!raw.isPrimitive(), where + " is nullable: not a primitive");
    }
    switch (kind) {
      case "integer":
        assertTrue(Set.of(int.class, long.class, Integer.class, Long.class).contains(raw), where);
        break;
      case "number":
        assertTrue(Set.of(double.class, Double.class).contains(raw), where);
        break;
      case "string":
        assertEquals(String.class, raw, where);
        break;
      case "boolean":
        assertTrue(Set.of(boolean.class, Boolean.class).contains(raw), where);
        break;
      case "array":
        assertEquals(List.class, raw, where);
        assertCompatible(defs, prop.get("items"),
            ((ParameterizedType) type).getActualTypeArguments()[0], where + "[]");
        break;
      case "object":
        assertEquals(Map.class, raw, where);
        assertCompatible(defs, prop.get("additionalProperties"),
            ((ParameterizedType) type).getActualTypeArguments()[1], where + "{}");
        break;
      default:
        throw new AssertionError(where + ": unknown schema type " + kind);
    }
  }

  private static Stream<Path> examples(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(p -> p.toString().endsWith(".json")).sorted().toList().stream();
    }
  }

  private static Class<?> typeOf(Path example) throws ClassNotFoundException {
    return recordOf(example.getFileName().toString().split("\\.")[0]);
  }

  @TestFactory
  Stream<DynamicTest> theSharedExamplesBindAndSurviveARoundTrip() throws IOException {
    return examples(PROTOCOL.resolve("examples")).map(p -> DynamicTest.dynamicTest(
        p.getFileName().toString(), () -> {
          Class<?> type = typeOf(p);
          Object once = PolicyLink.read(Files.readString(p, StandardCharsets.UTF_8), type);
          Object twice = PolicyLink.read(PolicyLink.write(once), type);
          assertEquals(once, twice);
        }));
  }

  @TestFactory
  Stream<DynamicTest> theSharedBadExamplesAreRefused() throws IOException {
    return examples(PROTOCOL.resolve("examples").resolve("invalid")).map(p ->
        DynamicTest.dynamicTest(p.getFileName().toString(), () -> {
          Class<?> type = typeOf(p);
          IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
              () -> PolicyLink.read(Files.readString(p, StandardCharsets.UTF_8), type));
          assertTrue(e.getMessage().startsWith(type.getSimpleName() + ": "), e.getMessage());
          assertTrue(!e.getMessage().contains("\n"), "one line: " + e.getMessage());
        }));
  }

  @Test
  void appNamesAreCutToTheSchemasBoundNeverInsideACharacter() throws IOException {
    int bound = schema().at("/$defs/App/properties/name/maxLength").asInt();
    assertEquals(1024, bound);
    String rocket = "\uD83D\uDE80";
    assertEquals("x".repeat(bound), app("x".repeat(bound + 5)).name());
    assertEquals("x".repeat(bound - 1) + rocket, app("x".repeat(bound - 1) + rocket).name(),
        "the schema counts characters (code points), not UTF-16 units");
    assertEquals("x".repeat(bound - 1), app("x".repeat(bound - 1) + rocket + rocket).name());
    assertEquals("word count " + rocket, app("word count " + rocket).name());
  }

  private static Messages.App app(String name) {
    return new Messages.App("application_1_0001", "u", name, "root.q", 0, 0, false, null, null);
  }

  @Test
  void emptyListsAndNullsAreLeftOutOfPayloads() {
    Messages.Payload p = new Messages.Payload(false, 7, null, null, null, null, null, null, null,
        List.of(new Messages.Beat("h:1", null)), null, null, null);
    assertEquals("{\"now_ms\":7,\"beats\":[{\"node\":\"h:1\"}]}", PolicyLink.write(p));
    assertEquals("{\"memory_mb\":1024,\"vcores\":1}",
        PolicyLink.write(new Messages.Resource(1024, 1, 0, 0)));
    Messages.Payload checked = new Messages.Payload(false, 7, null, null, null, null, null, null,
        null, null, null, List.of(), null);
    assertTrue(PolicyLink.write(checked).endsWith("\"check\":[]}"), "an empty check is a check");
  }
}
