#include "json_writer.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace spyglass {

namespace {

// The valid UTF-8 sequence starting at s[i]: its length and code point; length 0 when it
// is malformed.
struct Utf8Sequence {
  size_t length;
  uint32_t code_point;
};

Utf8Sequence utf8_sequence(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t len;
  uint32_t cp;
  if (b0 < 0x80) return {1, b0};
  if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return {0, 0};
  }
  if (i + len > s.size()) return {0, 0};
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return {0, 0};
    cp = (cp << 6) | (b & 0x3F);
  }
  // Reject overlong forms, surrogates and out-of-range code points.
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
    return {0, 0};
  }
  return {len, cp};
}

void append_u_escape(std::string& out, uint32_t unit) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(unit));
  out += buf;
}

// A byte written as it is: printable ASCII other than the quote and the backslash.
bool is_plain(unsigned char c) { return c >= 0x20 && c < 0x7F && c != '"' && c != '\\'; }

}  // namespace

void JsonWriter::append_escaped(std::string& out, std::string_view s) {
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    // A run of plain bytes goes in with one append: names and paths are nearly all such
    // bytes, and appending them one by one was the profile writer's largest cost.
    size_t end = i;
    while (end < s.size() && is_plain(static_cast<unsigned char>(s[end]))) ++end;
    if (end > i) {
      out.append(s.data() + i, end - i);
      i = end;
      continue;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // Escaped, as json.dumps writes them: the document is ASCII, so the run's reader
      // can tell at a glance that it holds nothing a terminal would act on.
      const Utf8Sequence seq = utf8_sequence(s, i);
      if (seq.length == 0) {
        append_u_escape(out, 0xFFFD);  // for each byte that is not valid UTF-8
        ++i;
      } else if (seq.code_point < 0x10000) {
        append_u_escape(out, seq.code_point);
        i += seq.length;
      } else {
        const uint32_t above = seq.code_point - 0x10000;
        append_u_escape(out, 0xD800 + (above >> 10));
        append_u_escape(out, 0xDC00 + (above & 0x3FF));
        i += seq.length;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7F) {
          append_u_escape(out, c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_element_.empty()) {
    if (has_element_.back()) out_.push_back(',');
    has_element_.back() = true;
  }
}

void JsonWriter::begin_object() {
  before_value();
  out_.push_back('{');
  has_element_.push_back(false);
}

void JsonWriter::end_object() {
  out_.push_back('}');
  has_element_.pop_back();
}

void JsonWriter::begin_array() {
  before_value();
  out_.push_back('[');
  has_element_.push_back(false);
}

void JsonWriter::end_array() {
  out_.push_back(']');
  has_element_.pop_back();
}

void JsonWriter::key(std::string_view k) {
  before_value();
  append_escaped(out_, k);
  out_.push_back(':');
  after_key_ = true;
}

void JsonWriter::value(std::string_view s) {
  before_value();
  append_escaped(out_, s);
}

void JsonWriter::value(double d) {
  before_value();
  if (!std::isfinite(d)) {
    out_ += "null";  // JSON has no NaN or infinity
    return;
  }
  char buf[32];
  // 12 significant digits: nanoseconds for runs up to 1,000 s of CPU. (printf's "%.12g",
  // written without printf's cost: a profile holds tens of thousands of numbers.)
  const auto done = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::general, 12);
  out_.append(buf, done.ptr);
}

void JsonWriter::value_fixed(double d, int decimals) {
  before_value();
  if (!std::isfinite(d)) {
    out_ += "null";
    return;
  }
  char buf[400];  // the longest fixed form of a double: 309 digits, a sign, the places
  const auto done = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed,
                                  std::clamp(decimals, 0, 17));
  char* end = done.ptr;
  if (std::find(buf, end, '.') != end) {
    while (end[-1] == '0') --end;
    if (end[-1] == '.') --end;
  }
  if (end - buf == 2 && buf[0] == '-' && buf[1] == '0') {
    out_ += '0';  // -0.00001 to no places
    return;
  }
  out_.append(buf, end);
}

void JsonWriter::value(int64_t i) {
  before_value();
  out_ += std::to_string(i);
}

void JsonWriter::value(uint64_t u) {
  before_value();
  out_ += std::to_string(u);
}

void JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
}

void JsonWriter::null() {
  before_value();
  out_ += "null";
}

void JsonWriter::raw(std::string_view json) {
  before_value();
  out_.append(json);
}

}  // namespace spyglass
