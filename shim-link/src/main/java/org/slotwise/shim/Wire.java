package org.slotwise.shim;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * Messages to and from JSON. {@link Messages} is generated from the schema
 * at build time; a message from Python is checked whole against it before it
 * binds, so one outside the schema is refused ({@link BadMessage}, one line
 * naming the field) and nothing of it is used.
 */
public final class Wire {
  private Wire() {
  }

  /** Strict: no unknown fields, no coerced types; nulls left out when writing. */
  static final ObjectMapper MAPPER = JsonMapper.builder()
      .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .serializationInclusion(JsonInclude.Include.NON_NULL)
      .enable(DeserializationFeature.FAIL_ON_NUMBERS_FOR_ENUMS)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
      .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
      .build();

  private static final Map<Class<?>, ObjectReader> READERS = new ConcurrentHashMap<>();

  /** A message that does not bind or breaks the schema; one line, naming the field. */
  public static final class BadMessage extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    BadMessage(String message) {
      super(message);
    }
  }

  /** A message of this type from JSON, checked whole, then bound; BadMessage ("Type: $.field: why") if not. */
  public static <T> T read(String json, Class<T> type) {
    String name = type.getSimpleName();
    try {
      JsonNode tree = MAPPER.readTree(json);
      if (tree == null || tree.isMissingNode()) {
        throw new BadMessage(name + ": empty message");
      }
      if (Messages.DEFINITIONS.contains(name)) {
        Messages.check(name, tree);
      }
      return READERS.computeIfAbsent(type, MAPPER::readerFor).readValue(tree);
    } catch (BadMessage e) {
      throw e;
    } catch (IOException | RuntimeException e) {
      String why = null;
      for (Throwable t = e; t != null && why == null; t = t.getCause()) {
        if (t instanceof Messages.Violation) {
          why = t.getMessage();
        }
      }
      if (why == null) {
        why = e instanceof JsonProcessingException
            ? ((JsonProcessingException) e).getOriginalMessage() : String.valueOf(e.getMessage());
      }
      throw new BadMessage(name + ": " + why.replaceAll("\\s+", " "));
    }
  }

  public static String write(Object message) {
    try {
      return MAPPER.writeValueAsString(message);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
