package org.slotwise.shim;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The protocol's schema as Java reads it: the very file Python binds
 * ({@code python/slotwise/protocol/schema.json}, copied into the shim's jar
 * at build time as {@code org/slotwise/shim/protocol/schema.json}), so every
 * limit (minimum, maximum, minLength, maxLength, maxItems, enum, required,
 * exactly-one-of) is written once. {@link #check} validates a message's JSON tree before
 * Jackson binds it; the limits Java's own payloads must keep to are read
 * from it too ({@link #limit}).
 *
 * <p>Only the part of JSON Schema the file uses is understood (as on the
 * Python side): type (one, or one with "null"), properties, required,
 * additionalProperties (false, or the schema of a map's values), items,
 * $ref, anyOf, oneOf of single required fields (exactly one of them set and
 * not null, as Python checks it), enum, minimum, maximum, minLength,
 * maxLength, maxItems; default and description are ignored. Any other keyword fails
 * the load, so a limit added to the file is never silently ignored here.
 * Strings are measured in code points, as JSON Schema and msgspec count them.
 */
public final class Schema {
  /** Where the build puts schema.json, beside this class. */
  static final String RESOURCE = "protocol/schema.json";

  private static final Set<String> KEYWORDS = Set.of("type", "description", "default",
      "properties", "required", "additionalProperties", "items", "$ref", "anyOf", "oneOf", "enum",
      "minimum", "maximum", "minLength", "maxLength", "maxItems");
  private static final Set<String> TYPES = Set.of("null", "boolean", "integer", "number",
      "string", "array", "object");

  private static volatile Schema protocol;

  private final int version;
  private final Map<String, Rule> defs = new LinkedHashMap<>();

  /** A message (or one of Java's own values) outside the schema: its path and what is wrong. */
  public static final class Violation extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;
    private final String path;

    Violation(String path, String problem) {
      super(path + ": " + problem);
      this.path = path;
    }

    /** The JSON path of the field, {@code $.assign[0].priority}. */
    public String path() {
      return path;
    }
  }

  /** The schema bundled with the shim (loaded once; an unreadable or unknown schema is a build error). */
  public static Schema protocol() {
    Schema s = protocol;
    if (s == null) {
      synchronized (Schema.class) {
        if (protocol == null) {
          try (InputStream in = Schema.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
              throw new IllegalStateException("the shim's jar lacks " + RESOURCE
                  + " (copied from python/slotwise/protocol/schema.json at build time)");
            }
            protocol = parse(new ObjectMapper().readTree(in));
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
        s = protocol;
      }
    }
    return s;
  }

  /** A schema from its JSON; IllegalArgumentException for anything this reader does not understand. */
  public static Schema parse(JsonNode root) {
    return new Schema(root);
  }

  private Schema(JsonNode root) {
    this.version = root.path("version").asInt(-1);
    JsonNode d = root.path("$defs");
    if (!d.isObject()) {
      throw new IllegalArgumentException("schema: no $defs");
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = d.fields(); it.hasNext();) {
      Map.Entry<String, JsonNode> e = it.next();
      defs.put(e.getKey(), compile(e.getValue(), "$defs/" + e.getKey()));
    }
    for (Map.Entry<String, Rule> e : defs.entrySet()) {
      e.getValue().resolve(this, "$defs/" + e.getKey());
    }
  }

  public int version() {
    return version;
  }

  public Set<String> definitions() {
    return defs.keySet();
  }

  // ------------------------------------------------------------------ rules

  /** One compiled schema. */
  private static final class Rule {
    String ref;
    Rule target; // ref resolved
    Set<String> types; // null: any
    List<JsonNode> enumValues;
    BigDecimal minimum;
    BigDecimal maximum;
    long minLong;
    long maxLong;
    boolean minFits; // the limit is a whole number within long: compare longs
    boolean maxFits;
    int minLength = -1;
    int maxLength = -1;
    int maxItems = -1;
    Map<String, Rule> properties;
    Set<String> required = Set.of();
    boolean additionalAllowed = true;
    Rule additional;
    Rule items;
    List<Rule> anyOf;
    List<String> oneOf; // exactly one of these fields set and not null

    void resolve(Schema s, String where) {
      if (ref != null && target == null) {
        target = s.defs.get(ref);
        if (target == null) {
          throw new IllegalArgumentException("schema: " + where + ": $ref to unknown " + ref);
        }
      }
      if (properties != null) {
        for (Map.Entry<String, Rule> e : properties.entrySet()) {
          e.getValue().resolve(s, where + "/" + e.getKey());
        }
      }
      if (additional != null) {
        additional.resolve(s, where + "/additionalProperties");
      }
      if (items != null) {
        items.resolve(s, where + "/items");
      }
      if (anyOf != null) {
        for (Rule r : anyOf) {
          r.resolve(s, where + "/anyOf");
        }
      }
    }

    /** Follows $ref. */
    Rule real() {
      return target == null ? this : target.real();
    }
  }

  private static Rule compile(JsonNode n, String where) {
    if (!n.isObject()) {
      throw new IllegalArgumentException("schema: " + where + " is not an object");
    }
    Rule r = new Rule();
    for (Iterator<String> it = n.fieldNames(); it.hasNext();) {
      String k = it.next();
      if (!KEYWORDS.contains(k)) {
        throw new IllegalArgumentException("schema: " + where + ": the shim does not understand '"
            + k + "' (teach org.slotwise.shim.Schema, then use it)");
      }
    }
    if (n.has("$ref")) {
      String ref = n.get("$ref").asText();
      if (!ref.startsWith("#/$defs/")) {
        throw new IllegalArgumentException("schema: " + where + ": unsupported $ref " + ref);
      }
      r.ref = ref.substring("#/$defs/".length());
    }
    JsonNode t = n.get("type");
    if (t != null) {
      r.types = new LinkedHashSet<>();
      if (t.isArray()) {
        t.forEach(x -> r.types.add(x.asText()));
      } else {
        r.types.add(t.asText());
      }
      for (String type : r.types) {
        if (!TYPES.contains(type)) {
          throw new IllegalArgumentException("schema: " + where + ": unknown type " + type);
        }
      }
    }
    if (n.has("enum")) {
      r.enumValues = new ArrayList<>();
      n.get("enum").forEach(r.enumValues::add);
    }
    if (n.has("minimum")) {
      r.minimum = n.get("minimum").decimalValue();
      r.minFits = fitsLong(r.minimum);
      r.minLong = r.minFits ? r.minimum.longValueExact() : 0;
    }
    if (n.has("maximum")) {
      r.maximum = n.get("maximum").decimalValue();
      r.maxFits = fitsLong(r.maximum);
      r.maxLong = r.maxFits ? r.maximum.longValueExact() : 0;
    }
    if (n.has("minLength")) {
      r.minLength = n.get("minLength").asInt();
    }
    if (n.has("maxLength")) {
      r.maxLength = n.get("maxLength").asInt();
    }
    if (n.has("maxItems")) {
      r.maxItems = n.get("maxItems").asInt();
    }
    if (n.has("properties")) {
      r.properties = new LinkedHashMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = n.get("properties").fields(); it.hasNext();) {
        Map.Entry<String, JsonNode> e = it.next();
        r.properties.put(e.getKey(), compile(e.getValue(), where + "/properties/" + e.getKey()));
      }
    }
    if (n.has("required")) {
      Set<String> req = new LinkedHashSet<>();
      n.get("required").forEach(x -> req.add(x.asText()));
      r.required = req;
    }
    JsonNode add = n.get("additionalProperties");
    if (add != null) {
      if (add.isBoolean()) {
        r.additionalAllowed = add.asBoolean();
      } else {
        r.additional = compile(add, where + "/additionalProperties");
      }
    }
    if (n.has("items")) {
      r.items = compile(n.get("items"), where + "/items");
    }
    if (n.has("anyOf")) {
      r.anyOf = new ArrayList<>();
      for (JsonNode alt : n.get("anyOf")) {
        r.anyOf.add(compile(alt, where + "/anyOf"));
      }
    }
    if (n.has("oneOf")) {
      r.oneOf = new ArrayList<>();
      for (JsonNode alt : n.get("oneOf")) {
        JsonNode req = alt.path("required");
        if (alt.size() != 1 || !req.isArray() || req.size() != 1) {
          throw new IllegalArgumentException("schema: " + where
              + ": only oneOf of single required fields is understood, not " + alt);
        }
        r.oneOf.add(req.get(0).asText());
      }
    }
    return r;
  }

  private static boolean fitsLong(BigDecimal d) {
    try {
      d.longValueExact();
      return true;
    } catch (ArithmeticException e) {
      return false;
    }
  }

  private static long longOr(BigDecimal d, long otherwise) {
    try {
      return d.longValueExact();
    } catch (ArithmeticException e) {
      return otherwise;
    }
  }

  // -------------------------------------------------------------- checking

  /** A JSON path, built only when it is reported. */
  private record Path(Path parent, String key, int index) {
    @Override
    public String toString() {
      if (parent == null) {
        return "$";
      }
      if (key == null) {
        return parent + "[" + index + "]";
      }
      return key.matches("[A-Za-z_][A-Za-z0-9_]*") ? parent + "." + key
          : parent + "[\"" + shorten(key, 64) + "\"]";
    }
  }

  /** Checks a whole message against definition {@code def}; Violation naming the first bad field. */
  public void check(String def, JsonNode message) {
    Rule r = defs.get(def);
    if (r == null) {
      throw new IllegalArgumentException("no definition " + def + " in the schema");
    }
    check(r, message, new Path(null, null, 0));
  }

  private void check(Rule r, JsonNode v, Path path) {
    if (r.target != null) {
      check(r.target, v, path);
      // sibling keywords of a $ref (description) carry no limits
    }
    if (r.anyOf != null) {
      checkAnyOf(r.anyOf, v, path);
    }
    if (r.enumValues != null && !r.enumValues.contains(v)) {
      throw new Violation(path.toString(), show(v) + " is not one of " + enumText(r.enumValues));
    }
    if (r.types != null && !hasType(r.types, v)) {
      throw new Violation(path.toString(), "expected " + String.join(" or ", r.types) + ", got "
          + show(v));
    }
    if (v.isNumber()) {
      checkNumber(r, v, path);
    } else if (v.isTextual()) {
      checkString(r, v.textValue(), path);
    } else if (v.isArray()) {
      if (r.maxItems >= 0 && v.size() > r.maxItems) {
        throw new Violation(path.toString(), "has " + String.format("%,d", v.size())
            + " items; at most " + String.format("%,d", r.maxItems));
      }
      if (r.items != null) {
        int i = 0;
        for (JsonNode e : v) {
          check(r.items, e, new Path(path, null, i++));
        }
      }
    } else if (v.isObject()) {
      checkObject(r, v, path);
    }
  }

  private void checkAnyOf(List<Rule> options, JsonNode v, Path path) {
    Violation why = null;
    for (Rule o : options) {
      try {
        check(o, v, path);
        return;
      } catch (Violation e) {
        Rule real = o.real();
        if (why == null || real.types == null || !real.types.equals(Set.of("null"))) {
          why = e; // the reason of the form that is not just null
        }
      }
    }
    throw why != null ? why : new Violation(path.toString(), "matches none of its forms");
  }

  private static boolean hasType(Set<String> types, JsonNode v) {
    switch (v.getNodeType()) {
      case NULL:
        return types.contains("null");
      case BOOLEAN:
        return types.contains("boolean");
      case NUMBER:
        return types.contains("number") || (types.contains("integer") && v.isIntegralNumber());
      case STRING:
        return types.contains("string");
      case ARRAY:
        return types.contains("array");
      case OBJECT:
        return types.contains("object");
      default:
        return false;
    }
  }

  private static void checkNumber(Rule r, JsonNode v, Path path) {
    if ((v.isDouble() || v.isFloat()) && !Double.isFinite(v.doubleValue())) {
      throw new Violation(path.toString(), v.doubleValue() + " is not a finite number");
    }
    if (r.minimum == null && r.maximum == null) {
      return;
    }
    boolean exact = v.isInt() || v.isLong();
    long x = exact ? v.longValue() : 0;
    if (r.minimum != null && (exact && r.minFits ? x < r.minLong
        : v.decimalValue().compareTo(r.minimum) < 0)) {
      throw new Violation(path.toString(), show(v) + " is below the minimum " + plain(r.minimum));
    }
    if (r.maximum != null && (exact && r.maxFits ? x > r.maxLong
        : v.decimalValue().compareTo(r.maximum) > 0)) {
      throw new Violation(path.toString(), show(v) + " is above the maximum " + plain(r.maximum));
    }
  }

  private static void checkString(Rule r, String s, Path path) {
    int units = s.length(); // UTF-16 units: at least the code points, at most twice as many
    if (r.maxLength >= 0 && units > r.maxLength) {
      int n = s.codePointCount(0, units);
      if (n > r.maxLength) {
        throw new Violation(path.toString(), "has " + String.format("%,d", n)
            + " characters; at most " + String.format("%,d", r.maxLength));
      }
    }
    if (r.minLength > 0 && units < 2L * r.minLength) {
      int n = s.codePointCount(0, units);
      if (n < r.minLength) {
        throw new Violation(path.toString(), n == 0 ? "is empty; at least " + r.minLength
            + " character(s)" : "has " + n + " character(s); at least " + r.minLength);
      }
    }
  }

  private void checkObject(Rule r, JsonNode v, Path path) {
    for (String req : r.required) {
      JsonNode f = v.get(req);
      if (f == null) {
        throw new Violation(new Path(path, req, 0).toString(), "required, missing");
      }
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = v.fields(); it.hasNext();) {
      Map.Entry<String, JsonNode> e = it.next();
      Rule p = r.properties == null ? null : r.properties.get(e.getKey());
      Path at = new Path(path, e.getKey(), 0);
      if (p != null) {
        check(p, e.getValue(), at);
      } else if (r.additional != null) {
        check(r.additional, e.getValue(), at);
      } else if (!r.additionalAllowed) {
        throw new Violation(at.toString(), "unknown field");
      }
    }
    if (r.oneOf != null) {
      int set = 0;
      for (String f : r.oneOf) {
        JsonNode x = v.get(f);
        if (x != null && !x.isNull()) {
          set++;
        }
      }
      if (set != 1) {
        throw new Violation(path.toString(), "exactly one of " + String.join(", ", r.oneOf)
            + " must be set (" + set + " are)");
      }
    }
  }

  private static String enumText(List<JsonNode> values) {
    List<String> out = new ArrayList<>();
    values.forEach(x -> out.add(x.toString()));
    return String.join(", ", out);
  }

  /** A value for a message: short, one line. */
  private static String show(JsonNode v) {
    if (v.isTextual()) {
      String s = v.textValue();
      return s.length() > 64 ? "a string of " + String.format("%,d", s.length()) + " characters"
          : v.toString();
    }
    if (v.isContainerNode()) {
      return v.isArray() ? "an array" : "an object";
    }
    return shorten(v.toString(), 64);
  }

  private static String shorten(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max) + "...";
  }

  private static String plain(BigDecimal d) {
    BigDecimal s = d.stripTrailingZeros();
    return s.scale() <= 0 && s.precision() - s.scale() <= 20 ? s.toPlainString() : s.toString();
  }

  // ------------------------------------------------------------ the limits

  /** A field's (or a definition's own) limits, for Java's own payloads. */
  public record Limit(BigDecimal minimum, BigDecimal maximum, int minLength, int maxLength) {
    /** The maximum as a long (Long.MAX_VALUE if none or beyond). */
    public long max() {
      return maximum == null ? Long.MAX_VALUE : longOr(maximum, Long.MAX_VALUE);
    }

    public long min() {
      return minimum == null ? Long.MIN_VALUE : longOr(minimum, Long.MIN_VALUE);
    }
  }

  /**
   * The limits of {@code def} (a definition such as "Name" or "Int32") or of
   * its property {@code field}, following $ref and nullable forms; for a map
   * (an object of additionalProperties only), its values' limits.
   */
  public Limit limit(String def, String field) {
    Rule r = defs.get(def);
    if (r == null) {
      throw new IllegalArgumentException("no definition " + def + " in the schema");
    }
    if (field != null) {
      r = r.real();
      Rule p = r.properties == null ? null : r.properties.get(field);
      if (p == null) {
        throw new IllegalArgumentException("no field " + def + "." + field + " in the schema");
      }
      r = p;
    }
    r = r.real();
    if (r.anyOf != null) {
      for (Rule o : r.anyOf) {
        Rule real = o.real();
        if (real.types == null || !real.types.equals(Set.of("null"))) {
          r = real;
          break;
        }
      }
    }
    if (r.properties == null && r.additional != null) {
      r = r.additional.real();
    }
    return new Limit(r.minimum, r.maximum, r.minLength, r.maxLength);
  }

  public Limit limit(String def) {
    return limit(def, null);
  }
}
