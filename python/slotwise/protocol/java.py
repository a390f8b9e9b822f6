"""Generates the Java binding of the protocol from schema.json, at build time.

``python3 java.py OUTDIR`` writes ``OUTDIR/org/slotwise/shim/PolicyServer.java``
(the interface Python implements: one method per call of the schema's
``calls`` the shim makes, and the dispatch of a call by its name) and
``OUTDIR/org/slotwise/shim/Messages.java``:
a record per object definition (snake_case on the wire, the schema's fields
in its order, required ones marked), an enum per enumerated field, and a
checker per definition that walks a message's JSON tree and refuses the first
field outside the schema (type, required, unknown field, enum, bounds,
lengths, items, exactly-one-of) with one line naming it.  Records Java builds
itself are fitted to the same bounds in their constructors (numbers clamped,
names and text cut, names that cannot be one left out), each fitting logged
once.  Maven runs this (exec-maven-plugin, generate-sources), so the shim can
not drift from the schema Python binds; only the standard library is used.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

SCHEMA = Path(__file__).resolve().parent / "schema.json"
INT32 = (-(2**31), 2**31 - 1)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.capitalize() for p in rest)


def pascal(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def jstr(s: str) -> str:
    return json.dumps(s)


KEYWORDS = {"type", "description", "default", "properties", "required", "additionalProperties",
            "items", "$ref", "anyOf", "oneOf", "enum", "minimum", "maximum", "minLength",
            "maxLength", "maxItems"}


def understood(spec, where: str) -> None:
    """Refuses a keyword this generator does not turn into Java: a limit added to the
    schema must never be silently left unchecked by the shim."""
    if not isinstance(spec, dict):
        return
    for k, v in spec.items():
        if k not in KEYWORDS:
            raise ValueError(f"schema: {where}: the Java generator does not understand {k!r} "
                             "(teach python/slotwise/protocol/java.py, then use it)")
        if k == "properties":
            for name, sub in v.items():
                understood(sub, f"{where}/properties/{name}")
        elif k in ("items", "additionalProperties"):
            understood(v, f"{where}/{k}")
        elif k in ("anyOf", "oneOf"):
            for sub in v:
                understood(sub, f"{where}/{k}")


class Gen:
    def __init__(self, schema: dict):
        for name, d in schema["$defs"].items():
            understood(d, f"$defs/{name}")
        self.schema = schema
        self.defs: dict = schema["$defs"]
        self.enums: dict[str, list[str]] = {}
        self.bounds: dict[str, str] = {}

    # ---------------------------------------------------------------- specs

    def real(self, spec: dict) -> dict:
        """A scalar $ref followed (objects stay references)."""
        if "$ref" in spec:
            target = self.defs[spec["$ref"].rsplit("/", 1)[-1]]
            if target.get("type") != "object":
                return {**target, **{k: v for k, v in spec.items() if k != "$ref"}}
        return spec

    def ref(self, spec: dict) -> str | None:
        return spec["$ref"].rsplit("/", 1)[-1] if "$ref" in spec else None

    def nonnull(self, spec: dict) -> tuple[dict, bool]:
        """(the spec without its null form, whether null is allowed)."""
        if "anyOf" in spec:
            (other,) = [o for o in spec["anyOf"] if o != {"type": "null"}]
            return other, True
        t = spec.get("type")
        if isinstance(t, list):
            (other,) = [k for k in t if k != "null"]
            return {**spec, "type": other}, True
        return spec, False

    def java_type(self, prop: str, spec: dict, boxed: bool) -> str:
        spec, nullable = self.nonnull(self.real(spec))
        boxed = boxed or nullable
        ref = self.ref(spec)
        if ref:
            return ref
        if "enum" in spec:
            name = pascal(prop)
            self.enums[name] = spec["enum"]
            return name
        t = spec.get("type")
        if t == "integer":
            small = spec.get("minimum", -(2**63)) >= INT32[0] and spec.get("maximum", 2**63) <= INT32[1]
            return ("Integer" if boxed else "int") if small else ("Long" if boxed else "long")
        if t == "number":
            return "Double" if boxed else "double"
        if t == "boolean":
            return "Boolean" if boxed else "boolean"
        if t == "string":
            return "String"
        if t == "array":
            items = spec["items"]
            inner = self.java_type(prop, items, True) if "enum" not in self.real(items) else "String"
            return f"List<{inner}>"
        if t == "object":
            return f"Map<String, {self.java_type(prop, spec['additionalProperties'], True)}>"
        raise TypeError(f"schema: no Java type for {prop}: {spec}")

    # -------------------------------------------------------------- records

    def record(self, name: str, d: dict) -> str:
        props: dict = d.get("properties", {})
        required = set(d.get("required", []))
        comps, fits = [], []
        for p, spec in props.items():
            optional = p not in required
            default = spec.get("default")
            boxed = optional and default not in (None, 0, False, [], {})  # e.g. relax_locality: true
            jt = self.java_type(p, spec, boxed)
            f = camel(p)
            ann = []
            if not optional:
                ann.append("@JsonProperty(required = true)")
            elif default in (0, False) and jt in ("int", "long", "double", "boolean"):
                ann.append("@JsonInclude(JsonInclude.Include.NON_DEFAULT)")
            elif default == [] or default == {}:
                ann.append("@JsonInclude(JsonInclude.Include.NON_EMPTY)")
                fits.append(f"{f} = {f} == null ? {'List' if default == [] else 'Map'}.of() : {f};")
            if boxed:
                fits.append(f"{f} = {f} == null ? {str(default).lower()} : {f};")
            comps.append(" ".join(ann + [jt, f]))
            fits.extend(self.fit(f"{name}.{p}", f, spec, jt))
        if d.get("oneOf"):
            a, b = (camel(alt["required"][0]) for alt in d["oneOf"])
            fits.insert(0, f'exactlyOne("{name}", {a}, {b});')
        body = ""
        if fits:
            body = f"\n    public {name} {{\n" + "".join(f"      {x}\n" for x in fits) + "    }\n  "
        doc = d.get("description", "").split(". ")[0].strip().rstrip(".")
        doc = f"  /** {doc}. */\n" if doc else ""
        sep = ",\n      "
        return f"{doc}  public record {name}(\n      {sep.join(comps)}) {{{body}}}\n"

    def fit(self, field: str, f: str, spec: dict, jt: str) -> list[str]:
        ref = self.ref(spec)
        spec, _ = self.nonnull(self.real(spec))
        t = spec.get("type")
        if ref == "Id" or "enum" in spec:
            return []  # an id cannot be cut; an enum is typed
        if t == "integer" and jt in ("int", "long"):
            lo, hi = spec.get("minimum"), spec.get("maximum")
            wide = INT32 if jt == "int" else (-(2**63), 2**63 - 1)
            if (lo is not None and lo > wide[0]) or (hi is not None and hi < wide[1]):
                cast = "(int) " if jt == "int" else ""
                return [f'{f} = {cast}clamp("{field}", {f}, {lo if lo is not None else wide[0]}L, '
                        f'{hi if hi is not None else wide[1]}L);']
        if t == "string" and "maxLength" in spec:
            return [f'{f} = text("{field}", {f}, {spec["maxLength"]});']
        if t == "array" and self.ref(spec["items"]) == "Name":
            return [f'{f} = names("{field}", {f});']
        if t == "object" and "additionalProperties" in spec:
            v = self.real(spec["additionalProperties"])
            if v.get("type") == "integer":
                return [f'{f} = counts("{field}", {f}, {v.get("minimum", 0)}, {v.get("maximum", INT32[1])});']
        return []

    def enum(self, name: str, values: list[str]) -> str:
        consts = ",\n".join(f"    @JsonProperty({jstr(v)}) {v.upper()}" for v in values)
        return f"  public enum {name} {{\n{consts}\n  }}\n"

    # ------------------------------------------------------------- checkers

    def check(self, spec: dict, x: str, at: str, depth: int) -> list[str]:
        """Statements that refuse value ``x`` (a JsonNode) at path ``at`` outside ``spec``."""
        ref = self.ref(spec)
        if ref and self.defs[ref].get("type") == "object":
            return [f"check{ref}({x}, {at});"]
        spec = self.real(spec)
        if "anyOf" in spec:
            other, _ = self.nonnull(spec)
            return [f"if (!{x}.isNull()) {{", *("  " + s for s in self.check(other, x, at, depth)), "}"]
        out = []
        if "enum" in spec:
            values = ", ".join(jstr(v) for v in spec["enum"])
            out.append(f"oneOf({x}, {at}, {jstr(values)}, {values});")
            return out
        t = spec.get("type")
        types = t if isinstance(t, list) else [t]
        kind = [k for k in types if k != "null"][0]
        test = {"integer": f"{x}.isIntegralNumber()", "number": f"{x}.isNumber()",
                "boolean": f"{x}.isBoolean()", "string": f"{x}.isTextual()",
                "array": f"{x}.isArray()", "object": f"{x}.isObject()"}[kind]
        nullable = "null" in types
        guard = f"!{x}.isNull() && " if nullable else ""
        out.append(f"if ({guard}!{test}) throw expected({x}, {at}, {jstr(' or '.join(types))});")
        inner = []
        if kind in ("integer", "number"):
            lo, hi = spec.get("minimum"), spec.get("maximum")
            inner.append(f"number({x}, {at}, {self.bound(lo)}, {self.bound(hi)});")
        elif kind == "string" and ("maxLength" in spec or "minLength" in spec):
            inner.append(f"string({x}, {at}, {spec.get('minLength', 0)}, {spec.get('maxLength', -1)});")
        elif kind == "array":
            if "maxItems" in spec:
                inner.append(f"items({x}, {at}, {spec['maxItems']});")
            e, i = f"e{depth}", f"i{depth}"
            body = self.check(spec["items"], e, f"at({at}, {i})", depth + 1)
            inner += [f"int {i} = 0;", f"for (JsonNode {e} : {x}) {{", *("  " + s for s in body),
                      f"  {i}++;", "}"]
        elif kind == "object":
            e = f"f{depth}"
            body = self.check(spec["additionalProperties"], f"{e}.getValue()",
                              f"at({at}, {e}.getKey())", depth + 1)
            inner += [f"for (Map.Entry<String, JsonNode> {e} : iterable({x}.fields())) {{",
                      *("  " + s for s in body), "}"]
        if inner and nullable:
            out += [f"if (!{x}.isNull()) {{", *("  " + s for s in inner), "}"]
        else:
            out += inner
        return out

    def bound(self, v) -> str:
        """A named constant for a numeric limit (made once, not per message)."""
        if v is None:
            return "null"
        text = str(v) if isinstance(v, int) else repr(v)
        return self.bounds.setdefault(text, f"B{len(self.bounds)}")

    def checker(self, name: str, d: dict) -> str:
        props: dict = d.get("properties", {})
        lines = ["if (!v.isObject()) throw expected(v, at, \"object\");"]
        for r in d.get("required", []):
            lines.append(f"required(v, at, {jstr(r)});")
        cases = []
        for p, spec in props.items():
            body = self.check(spec, "x", "a", 1)
            cases.append(f"        case {jstr(p)}: {{\n" + "".join(f"          {s}\n" for s in body)
                         + "          break;\n        }\n")
        lines.append("for (Map.Entry<String, JsonNode> e : iterable(v.fields())) {")
        lines.append("  JsonNode x = e.getValue();")
        lines.append("  P a = at(at, e.getKey());")
        lines.append("  switch (e.getKey()) {")
        body = "".join(cases) + "        default:\n          throw new Violation(a.toString(), \"unknown field\");\n"
        out = "".join(f"    {s}\n" for s in lines) + body + "      }\n    }\n"
        if d.get("oneOf"):
            fields = [alt["required"][0] for alt in d["oneOf"]]
            out += f"    exactlyOneSet(v, at, {', '.join(jstr(f) for f in fields)});\n"
        return f"  static void check{name}(JsonNode v, P at) {{\n{out}  }}\n"

    # ----------------------------------------------------------------- file

    def java(self) -> str:
        objects = {n: d for n, d in self.defs.items() if d.get("type") == "object"}
        records = [self.record(n, d) for n, d in objects.items()]
        enums = [self.enum(n, v) for n, v in self.enums.items()]
        checkers = [self.checker(n, d) for n, d in objects.items()]
        consts = "".join(f'  private static final Bound {n} = new Bound(new BigDecimal("{t}"));\n'
                         for t, n in self.bounds.items())
        dispatch = "".join(f"      case {jstr(n)}: check{n}(v, ROOT); return;\n" for n in objects)
        text_max = self.defs["FallbackEpisode"]["properties"]["reason"]["maxLength"]
        return TEMPLATE.format(
            version=self.schema["version"], name_max=self.defs["Name"]["maxLength"], text_max=text_max,
            records="\n".join(records), enums="\n".join(enums), checkers="\n".join(checkers),
            dispatch=dispatch, bounds=consts, names=", ".join(jstr(n) for n in objects))


def policy_server(schema: dict) -> str:
    """The interface Python implements (Py4J's proxy), from the calls the shim makes."""
    calls = {n: c for n, c in schema["calls"].items() if c["caller"] == "shim"}
    arg = {n: camel(re.sub(r"(?<!^)(?=[A-Z])", "_", c["argument"]).lower()) for n, c in calls.items()}
    methods = "".join(f'  /** {c["argument"]} to {c["answer"]}: {c["doc"]} */\n  String {camel(n)}(String {arg[n]});\n\n'
                      for n, c in calls.items())
    cases = "".join(f'      case {jstr(n)} -> policy.{camel(n)}(argument);\n' for n in calls)
    return POLICY_SERVER.format(methods=methods, cases=cases)


POLICY_SERVER = """\
// Generated from python/slotwise/protocol/schema.json ("calls") by python/slotwise/protocol/java.py
// at build time. Do not edit: change the schema.
package org.slotwise.shim;

/**
 * What the Python policy server implements: the calls the shim makes, each
 * one JSON message of the protocol each way (docs/protocol.md), so each call
 * is exactly one Py4J round trip.
 */
public interface PolicyServer {{
{methods}  /** The call of that name (as the schema names it) made to {{@code policy}}. */
  static String call(PolicyServer policy, String call, String argument) {{
    return switch (call) {{
{cases}      default -> throw new IllegalArgumentException("no call " + call);
    }};
  }}
}}
"""


TEMPLATE = """\
// Generated from python/slotwise/protocol/schema.json by python/slotwise/protocol/java.py
// at build time. Do not edit: change the schema.
package org.slotwise.shim;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The protocol's messages (schema.json), generated: records, enums and a checker per definition. */
@SuppressWarnings("all")
public final class Messages {{
  private Messages() {{
  }}

  public static final int PROTOCOL = {version};
  /** A name (a user, a queue, a host, a rack) at most this long: the schema's Name. */
  public static final int NAME_MAX = {name_max};
  /** Free text (a reason, an error) at most this long. */
  public static final int TEXT_MAX = {text_max};

{records}
{enums}
  // ------------------------------------------------------------ checking

  /** A message outside the schema: its JSON path and what is wrong. */
  public static final class Violation extends IllegalArgumentException {{
    private static final long serialVersionUID = 1L;

    Violation(String path, String problem) {{
      super(path + ": " + problem);
    }}
  }}

  /** The schema's object definitions, each a record here. */
  public static final Set<String> DEFINITIONS = Set.of({names});

  /** Checks a whole message against definition {{@code name}}; Violation naming the first bad field. */
  public static void check(String name, JsonNode v) {{
    switch (name) {{
{dispatch}      default: throw new IllegalStateException("no definition " + name + " in the schema");
    }}
  }}

{checkers}
  /** A JSON path, built only when it is reported. */
  record P(P parent, String key, int index) {{
    @Override
    public String toString() {{
      if (parent == null) {{
        return "$";
      }}
      if (key == null) {{
        return parent + "[" + index + "]";
      }}
      return key.matches("[A-Za-z_][A-Za-z0-9_]*") ? parent + "." + key
          : parent + "[\\"" + shorten(key, 64) + "\\"]";
    }}
  }}

  private static final P ROOT = new P(null, null, 0);

  private static P at(P p, String key) {{
    return new P(p, key, 0);
  }}

  private static P at(P p, int index) {{
    return new P(p, null, index);
  }}

  private static <T> Iterable<T> iterable(Iterator<T> it) {{
    return () -> it;
  }}

  private static Violation expected(JsonNode v, P at, String types) {{
    return new Violation(at.toString(), "expected " + types + ", got " + show(v));
  }}

  private static void required(JsonNode v, P at, String field) {{
    if (v.get(field) == null) {{
      throw new Violation(at(at, field).toString(), "required, missing");
    }}
  }}

  private static void oneOf(JsonNode v, P at, String text, String... values) {{
    if (v.isTextual()) {{
      for (String s : values) {{
        if (s.equals(v.textValue())) {{
          return;
        }}
      }}
    }}
    throw new Violation(at.toString(), show(v) + " is not one of " + text);
  }}

  /** A numeric limit; compared as a long when both it and the value are whole and fit one. */
  record Bound(BigDecimal d, boolean whole, long l) {{
    Bound(BigDecimal d) {{
      this(d, fits(d), fits(d) ? d.longValueExact() : 0);
    }}

    private static boolean fits(BigDecimal d) {{
      try {{
        d.longValueExact();
        return true;
      }} catch (ArithmeticException e) {{
        return false;
      }}
    }}

    int compare(JsonNode v) {{
      return whole && (v.isInt() || v.isLong()) ? Long.compare(v.longValue(), l)
          : v.decimalValue().compareTo(d);
    }}
  }}

{bounds}
  private static void number(JsonNode v, P at, Bound min, Bound max) {{
    if ((v.isDouble() || v.isFloat()) && !Double.isFinite(v.doubleValue())) {{
      throw new Violation(at.toString(), v.doubleValue() + " is not a finite number");
    }}
    if (min != null && min.compare(v) < 0) {{
      throw new Violation(at.toString(), show(v) + " is below the minimum " + plain(min.d()));
    }}
    if (max != null && max.compare(v) > 0) {{
      throw new Violation(at.toString(), show(v) + " is above the maximum " + plain(max.d()));
    }}
  }}

  private static void string(JsonNode v, P at, int minLength, int maxLength) {{
    String s = v.textValue();
    int units = s.length(); // UTF-16 units: at least the code points, at most twice as many
    if (maxLength >= 0 && units > maxLength) {{
      int n = s.codePointCount(0, units);
      if (n > maxLength) {{
        throw new Violation(at.toString(), "has " + String.format("%,d", n)
            + " characters; at most " + String.format("%,d", maxLength));
      }}
    }}
    if (minLength > 0 && units < 2L * minLength) {{
      int n = s.codePointCount(0, units);
      if (n < minLength) {{
        throw new Violation(at.toString(), n == 0 ? "is empty; at least " + minLength
            + " character(s)" : "has " + n + " character(s); at least " + minLength);
      }}
    }}
  }}

  private static void items(JsonNode v, P at, int maxItems) {{
    if (v.size() > maxItems) {{
      throw new Violation(at.toString(), "has " + String.format("%,d", v.size())
          + " items; at most " + String.format("%,d", maxItems));
    }}
  }}

  private static void exactlyOneSet(JsonNode v, P at, String... fields) {{
    int set = 0;
    for (String f : fields) {{
      JsonNode x = v.get(f);
      if (x != null && !x.isNull()) {{
        set++;
      }}
    }}
    if (set != 1) {{
      throw new Violation(at.toString(), "exactly one of " + String.join(", ", fields)
          + " must be set (" + set + " are)");
    }}
  }}

  /** A value for a message: short, one line. */
  private static String show(JsonNode v) {{
    if (v.isTextual()) {{
      String s = v.textValue();
      return s.length() > 64 ? "a string of " + String.format("%,d", s.length()) + " characters"
          : v.toString();
    }}
    if (v.isContainerNode()) {{
      return v.isArray() ? "an array" : "an object";
    }}
    return shorten(v.toString(), 64);
  }}

  private static String shorten(String s, int max) {{
    return s.length() <= max ? s : s.substring(0, max) + "...";
  }}

  private static String plain(BigDecimal d) {{
    BigDecimal s = d.stripTrailingZeros();
    return s.scale() <= 0 && s.precision() - s.scale() <= 20 ? s.toPlainString() : s.toString();
  }}

  // ------------------------------------------------------------- fitting

  private static final Logger LOG = LoggerFactory.getLogger(Messages.class);
  private static final Set<String> FITTED = ConcurrentHashMap.newKeySet();

  /** Logs once per field (per JVM) that Java made its own value fit the schema. */
  static void fitted(String field, String what) {{
    if (FITTED.add(field)) {{
      LOG.warn("Slotwise: {{}}: {{}}, to keep to the protocol's limits (schema.json); later ones "
          + "are not logged", field, what);
    }}
  }}

  static long clamp(String field, long v, long min, long max) {{
    if (v < min || v > max) {{
      long to = v < min ? min : max;
      fitted(field, v + " clamped to " + to);
      return to;
    }}
    return v;
  }}

  /** {{@code s}} cut to {{@code max}} UTF-16 units (so at most that many characters), never inside a pair. */
  public static String cut(String s, int max) {{
    if (s == null || s.length() <= max) {{
      return s;
    }}
    int end = max;
    if (end > 0 && Character.isHighSurrogate(s.charAt(end - 1))) {{
      end--;
    }}
    return s.substring(0, end);
  }}

  /** Free text or a name cut to its bound, logged once per field. */
  static String text(String field, String s, int max) {{
    if (s != null && s.length() > max && s.codePointCount(0, s.length()) > max) {{
      fitted(field, "a text of " + s.length() + " characters cut to " + max);
      return cut(s, max);
    }}
    return s;
  }}

  /** Names that can be no Name (empty, or too long) left out: none could match a real one. */
  static List<String> names(String field, List<String> in) {{
    if (in == null || in.stream().allMatch(Messages::isName)) {{
      return in;
    }}
    List<String> out = new ArrayList<>();
    for (String n : in) {{
      if (isName(n)) {{
        out.add(n);
      }} else {{
        fitted(field, "a name of " + (n == null ? 0 : n.length()) + " characters left out");
      }}
    }}
    return out;
  }}

  private static boolean isName(String n) {{
    return n != null && !n.isEmpty() && n.codePointCount(0, n.length()) <= NAME_MAX;
  }}

  /** Per-host or per-rack counts within bounds: an entry below the minimum left out, a huge one clamped. */
  static Map<String, Integer> counts(String field, Map<String, Integer> m, long min, long max) {{
    for (Integer v : m.values()) {{
      if (v == null || v < min || v > max) {{
        Map<String, Integer> out = new LinkedHashMap<>();
        for (Map.Entry<String, Integer> e : m.entrySet()) {{
          Integer n = e.getValue();
          if (n != null && n >= min) {{
            out.put(e.getKey(), (int) clamp(field, n, min, max));
          }} else {{
            fitted(field, "an entry of " + n + " left out");
          }}
        }}
        return out;
      }}
    }}
    return m;
  }}

  private static void exactlyOne(String what, Object a, Object b) {{
    if ((a == null) == (b == null)) {{
      throw new IllegalArgumentException(what + ": exactly one of its two fields must be set");
    }}
  }}
}}
"""


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: java.py OUTDIR", file=sys.stderr)
        return 2
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    outdir = Path(argv[1]) / "org" / "slotwise" / "shim"
    outdir.mkdir(parents=True, exist_ok=True)
    for name, text in (("Messages.java", Gen(schema).java()), ("PolicyServer.java", policy_server(schema))):
        out = outdir / name
        if not out.exists() or out.read_text(encoding="utf-8") != text:
            out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
