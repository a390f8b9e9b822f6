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
public final class Messages {
  private Messages() {
  }

  public static final int PROTOCOL = 1;

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
  public static <T> T read(String json, Class<T> type) {
    try {
      return READERS.computeIfAbsent(type, MAPPER::readerFor).readValue(json);
    } catch (IOException | RuntimeException e) {
      String why = e instanceof JsonProcessingException
          ? ((JsonProcessingException) e).getOriginalMessage() : String.valueOf(e.getMessage());
      throw new IllegalArgumentException(type.getSimpleName() + ": " + why.replaceAll("\\s+", " "));
    }
  }

  public static String write(Object message) {
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
  public @interface Req {
  }

  static <T> List<T> list(List<T> l) {
    return l == null ? List.of() : l;
  }

  static <T> List<T> orNull(List<T> l) {
    return l == null || l.isEmpty() ? null : l;
  }

  /** A name as the schema bounds it: at most 1,024 characters, never half a surrogate pair; null if empty. */
  public static String cut(String name) {
    if (name == null || name.isEmpty()) {
      return null;
    }
    int end = Math.min(name.length(), 1024);
    return name.substring(0, Character.isHighSurrogate(name.charAt(end - 1)) ? end - 1 : end);
  }

  private static void exactlyOne(String what, Object a, Object b) {
    if ((a == null) == (b == null)) {
      throw new IllegalArgumentException(what + ": exactly one of its two fields must be set");
    }
  }

  @JsonInclude(JsonInclude.Include.NON_DEFAULT)
  public record Resource(long memoryMb, long vcores, long mapSlots, long reduceSlots) {
    public static Resource memory(long memoryMb, long vcores) {
      return new Resource(memoryMb, vcores, 0, 0);
    }

    public static Resource slots(long maps, long reduces) {
      return new Resource(0, 0, maps, reduces);
    }
  }

  @JsonInclude(JsonInclude.Include.NON_DEFAULT)
  public record Amount(double memoryMb, double vcores, double mapSlots, double reduceSlots) {
    public static Amount memory(double memoryMb, double vcores) {
      return new Amount(memoryMb, vcores, 0, 0);
    }
  }

  // ---------------------------------------------------------- shim to Python
  public record Node(@Req String id, @Req String host, @Req String rack, @Req Resource capacity) {}

  public record Request(@Req int priority, @Req Resource resource, @Req int count, Map<String, Integer> hosts,
      Map<String, Integer> racks, Boolean relaxLocality) {
    public Request {
      relaxLocality = relaxLocality == null || relaxLocality; // the schema's default
    }
  }

  public record App(@Req String id, @Req String user, String name, @Req String queue, @Req int priority,
      @Req long submitMs, @JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean unmanaged,
      List<Request> requests) {}

  public record Container(@Req String id, @Req String app, @Req String node, @Req Resource resource,
      @JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean am, @Req int priority, String engineId) {}

  public record Beat(@Req String node, Resource free) {}

  public record FallbackEpisode(@Req String reason, @Req long startedMs, @Req long endedMs,
      @Req long heartbeats) {}

  public record AppCheck(@Req String app, @Req Resource pending, @Req Resource allocated,
      @Req int containers) {}

  public record Payload(@JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean full, @Req long nowMs, List<Node> nodes, List<String> nodesRemoved,
      List<App> apps, List<String> appsRemoved, List<Container> launched, List<String> rejected,
      List<String> finished, List<Beat> beats, List<FallbackEpisode> fallbacks,
      @JsonInclude(JsonInclude.Include.NON_NULL) List<AppCheck> check) {}

  public record PlaceRequest(@Req String app, @Req String user, @Req String queue, List<String> groups,
      @Req int priority) {}

  public record MoveRequest(@Req String app, @Req String queue) {}

  public record Ping() {}

  // ---------------------------------------------------------- Python's answers
  public enum Locality {
    @JsonProperty("node_local") NODE_LOCAL,
    @JsonProperty("rack_local") RACK_LOCAL,
    @JsonProperty("off_switch") OFF_SWITCH
  }

  public record Assignment(@Req String app, @Req String node, @Req int priority, @Req Locality locality,
      @Req String engineId) {}

  public record Preemption(@Req String container, @Req boolean kill) {}

  public record MoveOrder(@Req String app, @Req String queue, @Req String reason) {}

  public record HeartbeatAnswer(List<Assignment> assign, List<Preemption> preempt, boolean resync,
      String error) {
    public HeartbeatAnswer {
      assign = list(assign);
      preempt = list(preempt);
    }
  }

  public record QueueRow(@Req String name, String parent, @Req double weight, @Req Amount min, Amount max,
      @Req Amount fair, @Req Amount steady, @Req Amount usage, @Req Amount demand,
      @Req int runningApps, @Req int apps, Integer maxRunningApps, String policy, boolean recovery,
      Amount amMax, Boolean preemptable, boolean isParent) {}

  public record UpdateAnswer(List<Preemption> preempt, List<QueueRow> queues, List<MoveOrder> move,
      boolean resync, String error) {
    public UpdateAnswer {
      preempt = list(preempt);
      queues = list(queues);
      move = list(move);
    }
  }

  public record PlaceAnswer(String queue, String reject) {
    public PlaceAnswer {
      exactlyOne("PlaceAnswer", queue, reject);
    }
  }

  public record MoveAnswer(String queue, String error) {
    public MoveAnswer {
      exactlyOne("MoveAnswer", queue, error);
    }
  }

  public record Pong(@Req long pid) {}

  // ---------------------------------------------------------- Python to the shim
  public record ServerInfo(@Req long pid, @Req String host, @Req String allocations, @Req long startedMs,
      @Req String version) {}

  public record Register(@Req int protocol, @Req int callbackPort, @Req String callbackToken,
      boolean takeover, @Req ServerInfo server) {}

  public record ShimInfo(@Req String version, @Req String kind, @Req int protocol, @Req long deadlineMs,
      @Req long updateIntervalMs, @Req List<String> resourceTypes) {}

  public record Registered(String session, String refused, ServerInfo holder, @Req ShimInfo shim) {
    public Registered {
      exactlyOne("Registered", session, refused);
    }
  }

  public record Unregister(@Req String session) {}

  public record Unregistered(@Req boolean ok) {}

  public record StatusRequest(String session) {}

  public record ShimStatus(@Req boolean registered, ServerInfo holder, @Req boolean inFallback,
      String reason, Long sinceMs, @Req long episodeHeartbeats, @Req long heartbeats,
      @Req long fallbackHeartbeats, @Req long failures, @Req long nowMs) {}

  public record PriorityRequest(@Req String app, @Req int priority) {}

  public record PriorityAnswer(Integer priority, String error) {
    public PriorityAnswer {
      exactlyOne("PriorityAnswer", priority, error);
    }
  }
}
