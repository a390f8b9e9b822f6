package org.slotwise.shim;

import java.io.IOException;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import com.fasterxml.jackson.annotation.JacksonAnnotationsInside;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.json.JsonMapper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The protocol's messages as records, bound with Jackson to the schema that
 * defines them ({@code python/slotwise/protocol/schema.json}; the JUnit tests
 * check every record against it). Names are the schema's: a record per
 * definition, snake_case on the wire; {@link Req} marks a required field.
 *
 * <p>Limits: {@link #read} checks the whole message against the schema's
 * limits ({@link Schema}, the same file) before it binds, so a message from
 * Python outside them is refused whole ({@link BadMessage}, naming the
 * field). The records Java builds keep to the same limits when they are made:
 * free text (reasons, errors) and names are cut, amounts and counts clamped,
 * each logged once per field; what cannot be cut (ids) or is decided by the
 * shims (a queue name too long) is handled where it is made.
 */
public final class Messages {
  private Messages() {
  }

  public static final int PROTOCOL = 2;

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

  private static final Logger LOG = LoggerFactory.getLogger(Messages.class);
  static final Schema SCHEMA = Schema.protocol();

  /** A name (a user, a queue, a host, a rack) at most this long: the schema's Name. */
  public static final int NAME_MAX = SCHEMA.limit("Name").maxLength();
  /** Free text (a reason, an error) at most this long. */
  public static final int TEXT_MAX = SCHEMA.limit("FallbackEpisode", "reason").maxLength();
  /** The most assignments Java carries out for one node from one answer; more refuse the answer. */
  public static final int MAX_ASSIGN_PER_NODE = 1024; // Python: engine.MAX_ASSIGN_PER_HEARTBEAT
  private static final int APP_NAME_MAX = SCHEMA.limit("App", "name").maxLength();
  private static final Schema.Limit[] RESOURCE = {SCHEMA.limit("Resource", "memory_mb"),
      SCHEMA.limit("Resource", "vcores"), SCHEMA.limit("Resource", "map_slots"),
      SCHEMA.limit("Resource", "reduce_slots")};
  private static final Schema.Limit COUNT = SCHEMA.limit("Request", "count");
  private static final Schema.Limit LOCAL_COUNT = SCHEMA.limit("Request", "hosts"); // its values
  private static final Schema.Limit MS = SCHEMA.limit("Payload", "now_ms");
  private static final Schema.Limit CONTAINERS = SCHEMA.limit("AppCheck", "containers");
  private static final Schema.Limit DEADLINE = SCHEMA.limit("ShimInfo", "deadline_ms");
  private static final Schema.Limit INTERVAL = SCHEMA.limit("ShimInfo", "update_interval_ms");
  private static final Schema.Limit HEARTBEATS = SCHEMA.limit("ShimStatus", "heartbeats");

  /** A message that does not bind or breaks the schema's limits; one line, naming the field. */
  public static final class BadMessage extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    BadMessage(String message) {
      super(message);
    }
  }

  /**
   * A message of this type from JSON: checked whole against the schema's
   * limits, then bound. BadMessage (an IllegalArgumentException; one line,
   * "Type: $.field: what is wrong") if it does not bind or breaks a limit.
   */
  public static <T> T read(String json, Class<T> type) {
    String name = type.getSimpleName();
    try {
      JsonNode tree = MAPPER.readTree(json);
      if (tree == null || tree.isMissingNode()) {
        throw new BadMessage(name + ": empty message");
      }
      if (SCHEMA.definitions().contains(name)) {
        SCHEMA.check(name, tree);
      }
      return READERS.computeIfAbsent(type, MAPPER::readerFor).readValue(tree);
    } catch (BadMessage e) {
      throw e;
    } catch (IOException | RuntimeException e) {
      String why = null;
      for (Throwable t = e; t != null && why == null; t = t.getCause()) {
        if (t instanceof Schema.Violation) {
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

  private static final Set<String> FITTED = ConcurrentHashMap.newKeySet();

  /** Logs once per field (per JVM) that Java made its own value fit the schema. */
  static void fitted(String field, String what) {
    if (FITTED.add(field)) {
      LOG.warn("Slotwise: {}: {}, to keep to the protocol's limits (schema.json); later ones "
          + "are not logged", field, what);
    }
  }

  static long clamp(String field, long v, long min, long max) {
    if (v < min || v > max) {
      long to = v < min ? min : max;
      fitted(field, v + " clamped to " + to);
      return to;
    }
    return v;
  }

  static long clamp(String field, long v, Schema.Limit l) {
    return clamp(field, v, l.min(), l.max());
  }

  /** {@code s} cut to {@code max} UTF-16 units (so at most that many characters), never inside a pair. */
  public static String cut(String s, int max) {
    if (s == null || s.length() <= max) {
      return s;
    }
    int end = max;
    if (end > 0 && Character.isHighSurrogate(s.charAt(end - 1))) {
      end--;
    }
    return s.substring(0, end);
  }

  /** Free text (a reason, an error) cut to the schema's bound, logged once per field. */
  static String text(String field, String s, int max) {
    if (s != null && s.length() > max && s.codePointCount(0, s.length()) > max) {
      fitted(field, "a text of " + s.length() + " characters cut to " + max);
      return cut(s, max);
    }
    return s;
  }

  static String text(String field, String s) {
    return text(field, s, TEXT_MAX);
  }

  /** A name cut to the schema's Name bound, logged once per field. */
  static String cutName(String field, String s) {
    return text(field, s, NAME_MAX);
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

  /** An app's name as the schema bounds it: at most 1,024 characters, never half a surrogate pair; null if empty. */
  public static String cut(String name) {
    if (name == null || name.isEmpty()) {
      return null;
    }
    return cut(name, APP_NAME_MAX);
  }

  private static void exactlyOne(String what, Object a, Object b) {
    if ((a == null) == (b == null)) {
      throw new IllegalArgumentException(what + ": exactly one of its two fields must be set");
    }
  }

  @JsonInclude(JsonInclude.Include.NON_DEFAULT)
  public record Resource(long memoryMb, long vcores, long mapSlots, long reduceSlots) {
    /** Java's own amounts kept within the schema's (a node's room below 0 when it is overcommitted, sums past 2^53). */
    public Resource {
      memoryMb = clamp("Resource.memory_mb", memoryMb, RESOURCE[0]);
      vcores = clamp("Resource.vcores", vcores, RESOURCE[1]);
      mapSlots = clamp("Resource.map_slots", mapSlots, RESOURCE[2]);
      reduceSlots = clamp("Resource.reduce_slots", reduceSlots, RESOURCE[3]);
    }

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
  public record Node(@Req String id, @Req String host, @Req String rack, @Req Resource capacity) {
    public Node {
      host = cutName("Node.host", host);
      rack = cutName("Node.rack", rack);
    }
  }

  public record Request(@Req int priority, @Req Resource resource, @Req int count, Map<String, Integer> hosts,
      Map<String, Integer> racks, Boolean relaxLocality,
      @JsonInclude(JsonInclude.Include.NON_EMPTY) List<String> strictRacks) {
    public Request {
      relaxLocality = relaxLocality == null || relaxLocality; // the schema's default
      count = (int) clamp("Request.count", count, COUNT);
      hosts = counts("Request.hosts", hosts);
      racks = counts("Request.racks", racks);
      strictRacks = names("Request.strict_racks", strictRacks);
    }
  }

  /**
   * Names that can be no Name (empty, or too long) left out: none could match
   * a real one (a pool, a rack). The list itself when every name is one.
   */
  static List<String> names(String field, List<String> in) {
    if (in == null || in.stream().allMatch(Messages::isName)) {
      return in;
    }
    List<String> out = new ArrayList<>();
    for (String n : in) {
      if (isName(n)) {
        out.add(n);
      } else {
        fitted(field, "a name of " + (n == null ? 0 : n.length()) + " characters left out");
      }
    }
    return out;
  }

  private static boolean isName(String n) {
    return n != null && !n.isEmpty() && n.codePointCount(0, n.length()) <= NAME_MAX;
  }

  /** Per-host or per-rack counts within the schema's: an entry of none left out, a huge one clamped. */
  private static Map<String, Integer> counts(String field, Map<String, Integer> m) {
    if (m == null) {
      return null;
    }
    for (Integer v : m.values()) {
      if (v == null || v < LOCAL_COUNT.min() || v > LOCAL_COUNT.max()) {
        Map<String, Integer> out = new LinkedHashMap<>();
        for (Map.Entry<String, Integer> e : m.entrySet()) {
          Integer n = e.getValue();
          if (n != null && n >= LOCAL_COUNT.min()) {
            out.put(e.getKey(), (int) clamp(field, n, LOCAL_COUNT));
          } else {
            fitted(field, "an entry of " + n + " left out");
          }
        }
        return out;
      }
    }
    return m;
  }

  public record App(@Req String id, @Req String user, String name, @Req String queue, @Req int priority,
      @Req long submitMs, @JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean unmanaged,
      List<Request> requests) {
    public App {
      user = cutName("App.user", user);
      name = text("App.name", name, APP_NAME_MAX);
      queue = cutName("App.queue", queue);
      submitMs = clamp("App.submit_ms", submitMs, MS);
    }
  }

  public record Container(@Req String id, @Req String app, @Req String node, @Req Resource resource,
      @JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean am, @Req int priority, String engineId) {}

  public record Beat(@Req String node, Resource free) {}

  public record FallbackEpisode(@Req String reason, @Req long startedMs, @Req long endedMs,
      @Req long heartbeats) {
    public FallbackEpisode {
      reason = text("FallbackEpisode.reason", reason);
      startedMs = clamp("FallbackEpisode.started_ms", startedMs, MS);
      endedMs = clamp("FallbackEpisode.ended_ms", endedMs, MS);
      heartbeats = clamp("FallbackEpisode.heartbeats", heartbeats, HEARTBEATS);
    }
  }

  public record AppCheck(@Req String app, @Req Resource pending, @Req Resource allocated,
      @Req int containers) {
    public AppCheck {
      containers = (int) clamp("AppCheck.containers", containers, CONTAINERS);
    }
  }

  /** Why the shim did not carry out an assignment (the schema's Refusal.reason). */
  public enum Reason {
    @JsonProperty("locality") LOCALITY,
    @JsonProperty("no_room") NO_ROOM,
    @JsonProperty("blacklisted") BLACKLISTED,
    @JsonProperty("no_task") NO_TASK,
    @JsonProperty("no_attempt") NO_ATTEMPT,
    @JsonProperty("no_node") NO_NODE,
    @JsonProperty("error") ERROR
  }

  public record Refusal(@Req String engineId, @Req Reason reason) {}

  public record Payload(@JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean full, @Req long nowMs, List<Node> nodes, List<String> nodesRemoved,
      List<App> apps, List<String> appsRemoved, List<Container> launched, List<Refusal> rejected,
      List<String> finished, List<Beat> beats, List<FallbackEpisode> fallbacks,
      @JsonInclude(JsonInclude.Include.NON_NULL) List<AppCheck> check) {
    public Payload {
      nowMs = clamp("Payload.now_ms", nowMs, MS);
    }
  }

  public record PlaceRequest(@Req String app, @Req String user, @Req String queue, List<String> groups,
      @Req int priority) {
    /** A group that is no Name (empty, or too long) is left out: it cannot name a pool. */
    public PlaceRequest {
      user = cutName("PlaceRequest.user", user);
      groups = names("PlaceRequest.groups", groups);
    }
  }

  public record MoveRequest(@Req String app, @Req String queue) {}

  public record Ping() {}

  // ---------------------------------------------------------- Python's answers
  public enum Locality {
    @JsonProperty("node_local") NODE_LOCAL,
    @JsonProperty("rack_local") RACK_LOCAL,
    @JsonProperty("off_switch") OFF_SWITCH
  }

  public record Assignment(@Req String app, @Req String node, @Req int priority, @Req Locality locality,
      @Req String engineId, Resource resource) {}

  public record Preemption(@Req String container, @Req boolean kill) {}

  public record MoveOrder(@Req String app, @Req String queue, @Req String reason) {}

  /**
   * Beyond the schema, at most {@link #MAX_ASSIGN_PER_NODE} assignments for
   * one node (the node's room caps what is carried out first; this is the
   * hard ceiling): an answer with more is refused whole.
   */
  public record HeartbeatAnswer(List<Assignment> assign, List<Preemption> preempt, boolean resync,
      String error) {
    public HeartbeatAnswer {
      assign = list(assign);
      preempt = list(preempt);
      if (assign.size() > MAX_ASSIGN_PER_NODE) {
        Map<String, Integer> perNode = new HashMap<>();
        for (Assignment a : assign) {
          if (perNode.merge(a.node(), 1, Integer::sum) > MAX_ASSIGN_PER_NODE) {
            throw new Schema.Violation("$.assign", "more than " + String.format("%,d",
                MAX_ASSIGN_PER_NODE) + " assignments for node " + cut(a.node(), 64)
                + " in one answer (" + String.format("%,d", assign.size()) + " in all)");
          }
        }
      }
    }
  }

  public record QueueRow(@Req String name, String parent, @Req double weight, @Req Amount min, Amount max,
      @Req Amount fair, @Req Amount steady, @Req Amount usage, @Req Amount demand,
      @Req int runningApps, @Req int apps, Integer maxRunningApps, String policy, boolean recovery,
      Amount amMax, Boolean preemptable, boolean isParent) {}

  public record UpdateAnswer(List<Preemption> preempt, List<QueueRow> queues, List<String> queuesRemoved,
      boolean queuesFull, List<MoveOrder> move, boolean resync, List<String> waiting, String error) {
    public UpdateAnswer {
      preempt = list(preempt);
      queues = list(queues);
      queuesRemoved = list(queuesRemoved);
      move = list(move);
      waiting = list(waiting);
    }
  }

  public record PlaceAnswer(String queue, String reject) {
    public PlaceAnswer {
      exactlyOne("PlaceAnswer", queue, reject);
      reject = text("PlaceAnswer.reject", reject);
    }
  }

  public record MoveAnswer(String queue, String error) {
    public MoveAnswer {
      exactlyOne("MoveAnswer", queue, error);
      error = text("MoveAnswer.error", error);
    }
  }

  public record Pong(@Req long pid) {}

  // ---------------------------------------------------------- Python to the shim
  public record ServerInfo(@Req long pid, @Req String host, @Req String allocations, @Req long startedMs,
      @Req String version) {}

  public record Register(@Req int protocol, @Req int callbackPort, @Req String callbackToken,
      boolean takeover, @Req ServerInfo server) {}

  /** {@code preemption}: what the master's configuration says (Hadoop's default: off). */
  public record ShimInfo(@Req String version, @Req String kind, @Req int protocol, @Req long deadlineMs,
      @Req long updateIntervalMs, @Req List<String> resourceTypes, boolean preemption) {
    /** A deadline or interval configured past Int32 would keep every policy server from registering. */
    public ShimInfo {
      deadlineMs = clamp("ShimInfo.deadline_ms", deadlineMs, DEADLINE);
      updateIntervalMs = clamp("ShimInfo.update_interval_ms", updateIntervalMs, INTERVAL);
    }
  }

  public record Registered(String session, String refused, ServerInfo holder, @Req ShimInfo shim) {
    public Registered {
      exactlyOne("Registered", session, refused);
      refused = text("Registered.refused", refused);
    }
  }

  public record Unregister(@Req String session) {}

  public record Unregistered(@Req boolean ok) {}

  public record StatusRequest(String session) {}

  public record ShimStatus(@Req boolean registered, ServerInfo holder, @Req boolean inFallback,
      String reason, Long sinceMs, @Req long episodeHeartbeats, @Req long heartbeats,
      @Req long fallbackHeartbeats, @Req long failures, @Req long nowMs) {
    public ShimStatus {
      reason = text("ShimStatus.reason", reason);
    }
  }

  public record PriorityRequest(@Req String app, @Req int priority) {}

  public record PriorityAnswer(Integer priority, String error) {
    public PriorityAnswer {
      exactlyOne("PriorityAnswer", priority, error);
      error = text("PriorityAnswer.error", error);
    }
  }
}
