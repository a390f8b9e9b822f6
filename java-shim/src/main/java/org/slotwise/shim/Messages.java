package org.slotwise.shim;

import java.io.IOException;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import com.fasterxml.jackson.annotation.JacksonAnnotationsInside;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * The protocol's messages as records, bound with Jackson to the schema that
 * defines them ({@code python/slotwise/protocol/schema.json}; the JUnit tests
 * check every record against it). Names are the schema's: a record per
 * definition, snake_case on the wire; {@link Req} marks a required field.
 */
final class Messages {
  private Messages() {
  }

  static final int PROTOCOL = 1;

  /**
   * Strict: unknown fields, missing required ones, wrong or coerced types all
   * fail. An absent optional field takes the schema's default (0, false, null).
   * Nulls are left out when writing (an empty string or list is a value).
   */
  static final ObjectMapper MAPPER = JsonMapper.builder()
      .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
      .serializationInclusion(JsonInclude.Include.NON_NULL)
      .enable(DeserializationFeature.FAIL_ON_NUMBERS_FOR_ENUMS)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
      .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
      .build();

  private static final Map<Class<?>, ObjectReader> READERS = new ConcurrentHashMap<>();

  /** A message of this type from JSON; IllegalArgumentException (one line) if it does not bind. */
  static <T> T read(String json, Class<T> type) {
    try {
      return READERS.computeIfAbsent(type, MAPPER::readerFor).readValue(json);
    } catch (IOException | RuntimeException e) {
      String why = e instanceof JsonProcessingException
          ? ((JsonProcessingException) e).getOriginalMessage() : String.valueOf(e.getMessage());
      throw new IllegalArgumentException(type.getSimpleName() + ": " + why.replaceAll("\\s+", " "));
    }
  }

  static String write(Object message) {
    try {
      return MAPPER.writeValueAsString(message);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A field the schema requires. */
  @Retention(RetentionPolicy.RUNTIME)
  @Target({ElementType.RECORD_COMPONENT, ElementType.FIELD, ElementType.PARAMETER, ElementType.METHOD})
  @JacksonAnnotationsInside
  @JsonProperty(required = true)
  @interface Req {
  }

  static <T> List<T> list(List<T> l) {
    return l == null ? List.of() : l;
  }

  static <T> List<T> orNull(List<T> l) {
    return l == null || l.isEmpty() ? null : l;
  }

  private static void exactlyOne(String what, Object a, Object b) {
    if ((a == null) == (b == null)) {
      throw new IllegalArgumentException(what + ": exactly one of its two fields must be set");
    }
  }

  @JsonInclude(JsonInclude.Include.NON_DEFAULT)
  record Resource(long memoryMb, long vcores, long mapSlots, long reduceSlots) {
    static Resource of(org.apache.hadoop.yarn.api.records.Resource r) {
      return new Resource(r.getMemorySize(), r.getVirtualCores(), 0, 0);
    }
  }

  record Amount(double memoryMb, double vcores) {}

  // ---------------------------------------------------------- shim to Python
  record Node(@Req String id, @Req String host, @Req String rack, @Req Resource capacity) {}

  record Request(@Req int priority, @Req Resource resource, @Req int count, Map<String, Integer> hosts,
      Map<String, Integer> racks, Boolean relaxLocality) {
    Request {
      relaxLocality = relaxLocality == null || relaxLocality; // the schema's default
    }
  }

  record App(@Req String id, @Req String user, String name, @Req String queue, @Req int priority,
      @Req long submitMs, @JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean unmanaged,
      List<Request> requests) {}

  record Container(@Req String id, @Req String app, @Req String node, @Req Resource resource,
      @JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean am, @Req int priority, String engineId) {}

  record Beat(@Req String node, Resource free) {}

  record FallbackEpisode(@Req String reason, @Req long startedMs, @Req long endedMs,
      @Req long heartbeats) {}

  record AppCheck(@Req String app, @Req Resource pending, @Req Resource allocated,
      @Req int containers) {}

  record Payload(@JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean full, @Req long nowMs, List<Node> nodes, List<String> nodesRemoved,
      List<App> apps, List<String> appsRemoved, List<Container> launched, List<String> rejected,
      List<String> finished, List<Beat> beats, List<FallbackEpisode> fallbacks,
      @JsonInclude(JsonInclude.Include.NON_NULL) List<AppCheck> check) {}

  record PlaceRequest(@Req String app, @Req String user, @Req String queue, List<String> groups,
      @Req int priority) {}

  record MoveRequest(@Req String app, @Req String queue) {}

  record Ping() {}

  // ---------------------------------------------------------- Python's answers
  enum Locality {
    @JsonProperty("node_local") NODE_LOCAL,
    @JsonProperty("rack_local") RACK_LOCAL,
    @JsonProperty("off_switch") OFF_SWITCH
  }

  record Assignment(@Req String app, @Req String node, @Req int priority, @Req Locality locality,
      @Req String engineId) {}

  record Preemption(@Req String container, @Req boolean kill) {}

  record MoveOrder(@Req String app, @Req String queue, @Req String reason) {}

  record HeartbeatAnswer(List<Assignment> assign, List<Preemption> preempt, boolean resync,
      String error) {
    HeartbeatAnswer {
      assign = list(assign);
      preempt = list(preempt);
    }
  }

  record QueueRow(@Req String name, String parent, @Req double weight, @Req Amount min, Amount max,
      @Req Amount fair, @Req Amount steady, @Req Amount usage, @Req Amount demand,
      @Req int runningApps, @Req int apps, Integer maxRunningApps, String policy, boolean recovery,
      Amount amMax, Boolean preemptable, boolean isParent) {}

  record UpdateAnswer(List<Preemption> preempt, List<QueueRow> queues, List<MoveOrder> move,
      boolean resync, String error) {
    UpdateAnswer {
      preempt = list(preempt);
      queues = list(queues);
      move = list(move);
    }
  }

  record PlaceAnswer(String queue, String reject) {
    PlaceAnswer {
      exactlyOne("PlaceAnswer", queue, reject);
    }
  }

  record MoveAnswer(String queue, String error) {
    MoveAnswer {
      exactlyOne("MoveAnswer", queue, error);
    }
  }

  record Pong(@Req long pid) {}

  // ---------------------------------------------------------- Python to the shim
  record ServerInfo(@Req long pid, @Req String host, @Req String allocations, @Req long startedMs,
      @Req String version) {}

  record Register(@Req int protocol, @Req int callbackPort, @Req String callbackToken,
      boolean takeover, @Req ServerInfo server) {}

  record ShimInfo(@Req String version, @Req String kind, @Req int protocol, @Req long deadlineMs,
      @Req long updateIntervalMs, @Req List<String> resourceTypes) {}

  record Registered(String session, String refused, ServerInfo holder, @Req ShimInfo shim) {
    Registered {
      exactlyOne("Registered", session, refused);
    }
  }

  record Unregister(@Req String session) {}

  record Unregistered(@Req boolean ok) {}

  record StatusRequest(String session) {}

  record ShimStatus(@Req boolean registered, ServerInfo holder, @Req boolean inFallback,
      String reason, Long sinceMs, @Req long episodeHeartbeats, @Req long heartbeats,
      @Req long fallbackHeartbeats, @Req long failures, @Req long nowMs) {}

  record PriorityRequest(@Req String app, @Req int priority) {}

  record PriorityAnswer(Integer priority, String error) {
    PriorityAnswer {
      exactlyOne("PriorityAnswer", priority, error);
    }
  }
}
