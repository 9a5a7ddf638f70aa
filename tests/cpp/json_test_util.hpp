// A strict little JSON parser for the tests: it accepts exactly RFC 8259 documents whose
// strings are valid UTF-8, and builds a tree the tests can inspect. Objects keep their
// members in document order and remember whether a key appeared twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spyglass_test {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string number_text;  // the number exactly as written
  std::string string;       // decoded
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;
  bool duplicate_keys = false;

  bool is_null() const { return type == Type::kNull; }
  bool is_bool() const { return type == Type::kBool; }
  bool is_number() const { return type == Type::kNumber; }
  bool is_string() const { return type == Type::kString; }
  bool is_array() const { return type == Type::kArray; }
  bool is_object() const { return type == Type::kObject; }

  // The member named `key`, or nullptr (also for non-objects).
  const JsonValue* find(std::string_view key) const {
    if (type != Type::kObject) return nullptr;
    for (const auto& [k, v] : object) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
inline bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (b0 < 0x80) {
      ++i;
      continue;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2;
      cp = b0 & 0x1Fu;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3;
      cp = b0 & 0x0Fu;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4;
      cp = b0 & 0x07u;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

inline void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class JsonParser {
 public:
  // Parses a whole document; on failure returns nullopt and sets `error` (with the offset).
  static std::optional<JsonValue> parse(std::string_view text, std::string* error = nullptr) {
    JsonParser p(text);
    JsonValue v;
    p.skip_ws();
    if (!p.parse_value(v, 0)) {
      if (error != nullptr) *error = p.error_ + " at offset " + std::to_string(p.pos_);
      return std::nullopt;
    }
    p.skip_ws();
    if (p.pos_ != text.size()) {
      if (error != nullptr) *error = "trailing characters at offset " + std::to_string(p.pos_);
      return std::nullopt;
    }
    return v;
  }

 private:
  explicit JsonParser(std::string_view text) : s_(text) {}

  static constexpr int kMaxNesting = 512;

  bool fail(const char* why) {
    error_ = why;
    return false;
  }
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  void skip_ws() {
    while (!at_end() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return fail("bad literal");
    pos_ += word.size();
    return true;
  }

  bool parse_value(JsonValue& v, int depth) {
    if (depth > kMaxNesting) return fail("nesting too deep");
    switch (peek()) {
      case '{':
        return parse_object(v, depth);
      case '[':
        return parse_array(v, depth);
      case '"':
        v.type = JsonValue::Type::kString;
        return parse_string(v.string);
      case 't':
        v.type = JsonValue::Type::kBool;
        v.boolean = true;
        return literal("true");
      case 'f':
        v.type = JsonValue::Type::kBool;
        v.boolean = false;
        return literal("false");
      case 'n':
        v.type = JsonValue::Type::kNull;
        return literal("null");
      default:
        return parse_number(v);
    }
  }

  bool parse_object(JsonValue& v, int depth) {
    v.type = JsonValue::Type::kObject;
    ++pos_;  // '{'
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_ws();
      if (peek() != '"') return fail("expected a key");
      std::string key;
      if (!parse_string(key)) return false;
      skip_ws();
      if (peek() != ':') return fail("expected ':'");
      ++pos_;
      skip_ws();
      JsonValue member;
      if (!parse_value(member, depth + 1)) return false;
      if (v.find(key) != nullptr) v.duplicate_keys = true;
      v.object.emplace_back(std::move(key), std::move(member));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  bool parse_array(JsonValue& v, int depth) {
    v.type = JsonValue::Type::kArray;
    ++pos_;  // '['
    skip_ws();
    if (peek() == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_ws();
      JsonValue element;
      if (!parse_value(element, depth + 1)) return false;
      v.array.push_back(std::move(element));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool parse_hex4(uint32_t* out) {
    if (pos_ + 4 > s_.size()) return fail("short \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return fail("bad hex digit");
      }
    }
    *out = v;
    return true;
  }

  bool parse_string(std::string& out) {
    ++pos_;  // opening quote
    const size_t raw_begin = pos_;
    std::string decoded;
    while (true) {
      if (at_end()) return fail("unterminated string");
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        // The raw bytes must be valid UTF-8 (escapes are ASCII, so checking them all works).
        if (!is_valid_utf8(s_.substr(raw_begin, pos_ - raw_begin))) {
          return fail("string is not valid UTF-8");
        }
        ++pos_;
        out = std::move(decoded);
        return true;
      }
      if (c < 0x20) return fail("raw control character in string");
      if (c != '\\') {
        decoded.push_back(static_cast<char>(c));
        ++pos_;
        continue;
      }
      ++pos_;
      if (at_end()) return fail("dangling backslash");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          decoded.push_back('"');
          break;
        case '\\':
          decoded.push_back('\\');
          break;
        case '/':
          decoded.push_back('/');
          break;
        case 'b':
          decoded.push_back('\b');
          break;
        case 'f':
          decoded.push_back('\f');
          break;
        case 'n':
          decoded.push_back('\n');
          break;
        case 'r':
          decoded.push_back('\r');
          break;
        case 't':
          decoded.push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!parse_hex4(&cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("lone low surrogate escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo = 0;
            if (s_.substr(pos_, 2) != "\\u") return fail("lone high surrogate escape");
            pos_ += 2;
            if (!parse_hex4(&lo)) return false;
            if (lo < 0xDC00 || lo > 0xDFFF) return fail("bad low surrogate escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          append_utf8(decoded, cp);
          break;
        }
        default:
          return fail("bad escape");
      }
    }
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  bool parse_number(JsonValue& v) {
    const size_t begin = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (is_digit(peek())) {
      while (is_digit(peek())) ++pos_;
    } else {
      return fail("unexpected character");
    }
    if (peek() == '.') {
      ++pos_;
      if (!is_digit(peek())) return fail("digit expected after '.'");
      while (is_digit(peek())) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit(peek())) return fail("digit expected in exponent");
      while (is_digit(peek())) ++pos_;
    }
    v.type = JsonValue::Type::kNumber;
    v.number_text = std::string(s_.substr(begin, pos_ - begin));
    v.number = std::strtod(v.number_text.c_str(), nullptr);
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace spyglass_test
