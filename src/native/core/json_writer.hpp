// A small streaming JSON writer. Its output is ASCII, as json.dumps writes by default:
// everything outside printable ASCII is a \u escape, and a byte that is not valid UTF-8
// becomes U+FFFD (file names and source lines may hold arbitrary bytes), so every profile
// parses and none carries a raw control character.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace spyglass {

class JsonWriter {
 public:
  void begin_object();
  void end_object();
  void begin_array();
  void end_array();
  void key(std::string_view k);
  void value(std::string_view s);
  void value(const char* s) { value(std::string_view(s)); }
  void value(double d);
  // `d` with `decimals` places after the point, trailing zeros dropped (never in
  // exponent form): for figures whose last digits are noise or beyond any chart.
  void value_fixed(double d, int decimals);
  void value(int64_t i);
  void value(uint64_t u);
  void value(int i) { value(static_cast<int64_t>(i)); }
  void value(bool b);
  void null();
  // Inserts an already serialised JSON value verbatim (the caller vouches for it).
  void raw(std::string_view json);

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

  static void append_escaped(std::string& out, std::string_view s);

 private:
  void before_value();
  std::string out_;
  // One entry per open container: whether it already holds an element.
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace spyglass
