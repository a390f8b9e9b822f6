package org.slotwise.shim;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A tiny JSON writer and reader: the shim's payloads and Python's answers are
 * small and of fixed shape, so this is all the JSON the shim needs.
 */
final class Json {
  private Json() {
  }

  /** Compact writer; commas are placed automatically. */
  static final class Out {
    private final StringBuilder sb = new StringBuilder(256);
    private boolean first = true;

    Out beginObject() {
      sep();
      sb.append('{');
      first = true;
      return this;
    }

    Out endObject() {
      sb.append('}');
      first = false;
      return this;
    }

    Out beginArray() {
      sep();
      sb.append('[');
      first = true;
      return this;
    }

    Out endArray() {
      sb.append(']');
      first = false;
      return this;
    }

    /** An object key; the next call writes its value. */
    Out key(String k) {
      sep();
      quote(sb, k);
      sb.append(':');
      first = true;
      return this;
    }

    Out value(String s) {
      sep();
      if (s == null) {
        sb.append("null");
      } else {
        quote(sb, s);
      }
      return this;
    }

    Out value(long n) {
      sep();
      sb.append(n);
      return this;
    }

    Out value(boolean b) {
      sep();
      sb.append(b);
      return this;
    }

    Out nul() {
      sep();
      sb.append("null");
      return this;
    }

    Out strings(Iterable<String> items) {
      beginArray();
      for (String s : items) {
        value(s);
      }
      return endArray();
    }

    /** An object of string keys to counts. */
    Out counts(Map<String, Integer> m) {
      beginObject();
      for (Map.Entry<String, Integer> e : m.entrySet()) {
        key(e.getKey()).value(e.getValue());
      }
      return endObject();
    }

    private void sep() {
      if (!first) {
        sb.append(',');
      }
      first = false;
    }

    @Override
    public String toString() {
      return sb.toString();
    }
  }

  static void quote(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"': sb.append("\\\""); break;
        case '\\': sb.append("\\\\"); break;
        case '\n': sb.append("\\n"); break;
        case '\r': sb.append("\\r"); break;
        case '\t': sb.append("\\t"); break;
        case '\b': sb.append("\\b"); break;
        case '\f': sb.append("\\f"); break;
        default:
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
      }
    }
    sb.append('"');
  }

  /**
   * Parses one JSON value: objects become {@code Map<String, Object>} (in
   * order), arrays {@code List<Object>}, numbers {@code Long} or
   * {@code Double}, plus {@code String}, {@code Boolean} and {@code null};
   * like Python's json module it also reads NaN and (-)Infinity.
   *
   * @throws IllegalArgumentException on malformed input
   */
  static Object parse(String text) {
    if (text == null) {
      throw new IllegalArgumentException("no answer (null)");
    }
    Reader r = new Reader(text);
    r.ws();
    Object v = r.value(0);
    r.ws();
    if (r.pos != text.length()) {
      throw r.error("trailing characters");
    }
    return v;
  }

  private static final class Reader {
    private static final int MAX_DEPTH = 64;
    private final String s;
    private int pos;

    Reader(String s) {
      this.s = s;
    }

    IllegalArgumentException error(String what) {
      return new IllegalArgumentException(what + " at offset " + pos);
    }

    void ws() {
      while (pos < s.length()) {
        char c = s.charAt(pos);
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
          pos++;
        } else {
          break;
        }
      }
    }

    Object value(int depth) {
      if (depth > MAX_DEPTH) {
        throw error("nested too deeply");
      }
      if (pos >= s.length()) {
        throw error("unexpected end");
      }
      char c = s.charAt(pos);
      switch (c) {
        case '{': return object(depth);
        case '[': return array(depth);
        case '"': return string();
        case 't': return literal("true", Boolean.TRUE);
        case 'f': return literal("false", Boolean.FALSE);
        case 'n': return literal("null", null);
        // Python's json module writes these for non-finite floats.
        case 'N': return literal("NaN", Double.NaN);
        case 'I': return literal("Infinity", Double.POSITIVE_INFINITY);
        default:
          if (s.startsWith("-Infinity", pos)) {
            return literal("-Infinity", Double.NEGATIVE_INFINITY);
          }
          if (c == '-' || (c >= '0' && c <= '9')) {
            return number();
          }
          throw error("unexpected '" + c + "'");
      }
    }

    private Object literal(String word, Object v) {
      if (!s.startsWith(word, pos)) {
        throw error("bad literal");
      }
      pos += word.length();
      return v;
    }

    private Map<String, Object> object(int depth) {
      Map<String, Object> m = new LinkedHashMap<>();
      pos++; // {
      ws();
      if (peek() == '}') {
        pos++;
        return m;
      }
      while (true) {
        ws();
        if (peek() != '"') {
          throw error("expected a key");
        }
        String k = string();
        ws();
        expect(':');
        ws();
        m.put(k, value(depth + 1));
        ws();
        char c = next();
        if (c == '}') {
          return m;
        }
        if (c != ',') {
          throw error("expected ',' or '}'");
        }
      }
    }

    private List<Object> array(int depth) {
      List<Object> l = new ArrayList<>();
      pos++; // [
      ws();
      if (peek() == ']') {
        pos++;
        return l;
      }
      while (true) {
        ws();
        l.add(value(depth + 1));
        ws();
        char c = next();
        if (c == ']') {
          return l;
        }
        if (c != ',') {
          throw error("expected ',' or ']'");
        }
      }
    }

    private String string() {
      pos++; // opening quote
      StringBuilder sb = null;
      int start = pos;
      while (true) {
        if (pos >= s.length()) {
          throw error("unterminated string");
        }
        char c = s.charAt(pos);
        if (c == '"') {
          String out = sb == null ? s.substring(start, pos)
              : sb.append(s, start, pos).toString();
          pos++;
          return out;
        }
        if (c == '\\') {
          if (sb == null) {
            sb = new StringBuilder();
          }
          sb.append(s, start, pos);
          pos++;
          char e = next();
          switch (e) {
            case '"': sb.append('"'); break;
            case '\\': sb.append('\\'); break;
            case '/': sb.append('/'); break;
            case 'b': sb.append('\b'); break;
            case 'f': sb.append('\f'); break;
            case 'n': sb.append('\n'); break;
            case 'r': sb.append('\r'); break;
            case 't': sb.append('\t'); break;
            case 'u':
              if (pos + 4 > s.length()) {
                throw error("bad \\u escape");
              }
              try {
                sb.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
              } catch (NumberFormatException ex) {
                throw error("bad \\u escape");
              }
              pos += 4;
              break;
            default:
              throw error("bad escape");
          }
          start = pos;
        } else {
          if (c < 0x20) {
            throw error("control character in string");
          }
          pos++;
        }
      }
    }

    private Object number() {
      int start = pos;
      if (peek() == '-') {
        pos++;
      }
      boolean integral = true;
      while (pos < s.length()) {
        char c = s.charAt(pos);
        if (c >= '0' && c <= '9') {
          pos++;
        } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
          integral = false;
          pos++;
        } else {
          break;
        }
      }
      String t = s.substring(start, pos);
      try {
        if (integral && t.length() < 19) {
          return Long.parseLong(t);
        }
        return Double.parseDouble(t);
      } catch (NumberFormatException ex) {
        throw error("bad number '" + t + "'");
      }
    }

    private char peek() {
      if (pos >= s.length()) {
        throw error("unexpected end");
      }
      return s.charAt(pos);
    }

    private char next() {
      char c = peek();
      pos++;
      return c;
    }

    private void expect(char c) {
      if (next() != c) {
        pos--;
        throw error("expected '" + c + "'");
      }
    }
  }
}
