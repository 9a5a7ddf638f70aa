#include "core/json_writer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>

#include "json_test_util.hpp"

namespace spyglass {
namespace {

using spyglass_test::is_valid_utf8;
using spyglass_test::JsonParser;
using spyglass_test::JsonValue;

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

std::string escaped(std::string_view s) {
  std::string out;
  JsonWriter::append_escaped(out, s);
  return out;
}

std::string in_quotes(std::string_view inner) { return "\"" + std::string(inner) + "\""; }

bool is_ascii(std::string_view s) {
  for (const char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

// Valid UTF-8 `s` with everything past ASCII as the \u escapes json.dumps writes (UTF-16
// units, lower-case hex): what the writer must make of it, worked out independently.
std::string u_escaped(std::string_view s) {
  std::string out;
  const auto unit = [&out](uint32_t u) {
    static const char kHex[] = "0123456789abcdef";
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kHex[(u >> shift) & 0xF]);
  };
  for (size_t i = 0; i < s.size();) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      out.push_back(static_cast<char>(b0));
      ++i;
      continue;
    }
    const size_t len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : 2;
    uint32_t cp = b0 & (0xFFu >> (len + 1));
    for (size_t k = 1; k < len; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
    if (cp >= 0x10000) {
      unit(0xD800 + ((cp - 0x10000) >> 10));
      unit(0xDC00 + ((cp - 0x10000) & 0x3FF));
    } else {
      unit(cp);
    }
    i += len;
  }
  return out;
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// The decoded content of a single JSON string literal, checking it parses.
std::string decode_string_literal(const std::string& literal) {
  std::string error;
  const auto v = JsonParser::parse(literal, &error);
  EXPECT_TRUE(v.has_value()) << error << " in " << literal;
  if (!v.has_value() || !v->is_string()) {
    ADD_FAILURE() << "not a JSON string: " << literal;
    return {};
  }
  return v->string;
}

// ---------------------------------------------------------------- structure

TEST(JsonWriterTest, EmptyContainers) {
  JsonWriter obj;
  obj.begin_object();
  obj.end_object();
  EXPECT_EQ(obj.str(), "{}");

  JsonWriter arr;
  arr.begin_array();
  arr.end_array();
  EXPECT_EQ(arr.str(), "[]");
}

TEST(JsonWriterTest, NestingAndCommas) {
  JsonWriter w;
  w.begin_object();
  w.key("a");
  w.value(1);
  w.key("b");
  w.begin_array();
  w.value(1);
  w.value(2);
  w.begin_object();
  w.key("c");
  w.value(true);
  w.end_object();
  w.begin_array();
  w.end_array();
  w.end_array();
  w.key("d");
  w.begin_object();
  w.end_object();
  w.key("e");
  w.null();
  w.key("f");
  w.value(false);
  w.key("g");
  w.value("s");
  w.end_object();
  EXPECT_EQ(w.str(), R"({"a":1,"b":[1,2,{"c":true},[]],"d":{},"e":null,"f":false,"g":"s"})");
  EXPECT_TRUE(JsonParser::parse(w.str()).has_value());
}

TEST(JsonWriterTest, CommaAfterClosedContainers) {
  JsonWriter w;
  w.begin_array();
  w.begin_array();
  w.end_array();
  w.begin_array();
  w.value(1);
  w.end_array();
  w.begin_array();
  w.begin_array();
  w.value(2);
  w.value(3);
  w.end_array();
  w.end_array();
  w.begin_object();
  w.key("x");
  w.begin_object();
  w.key("y");
  w.begin_array();
  w.end_array();
  w.end_object();
  w.key("z");
  w.value(4);
  w.end_object();
  w.value(5);
  w.end_array();
  EXPECT_EQ(w.str(), R"([[],[1],[[2,3]],{"x":{"y":[]},"z":4},5])");
}

TEST(JsonWriterTest, DeepNestingStaysBalanced) {
  JsonWriter w;
  constexpr int kDepth = 200;
  for (int i = 0; i < kDepth; ++i) {
    w.begin_object();
    w.key("k");
    w.begin_array();
    w.value(i);
  }
  for (int i = 0; i < kDepth; ++i) {
    w.end_array();
    w.end_object();
  }
  std::string error;
  const auto v = JsonParser::parse(w.str(), &error);
  ASSERT_TRUE(v.has_value()) << error;
  const JsonValue* cur = &*v;
  for (int i = 0; i < kDepth; ++i) {
    ASSERT_TRUE(cur->is_object());
    ASSERT_EQ(cur->object.size(), 1u);
    const JsonValue* arr = cur->find("k");
    ASSERT_NE(arr, nullptr);
    ASSERT_TRUE(arr->is_array());
    ASSERT_EQ(arr->array.size(), i + 1 < kDepth ? 2u : 1u);
    EXPECT_EQ(arr->array[0].number_text, std::to_string(i));
    if (i + 1 < kDepth) cur = &arr->array[1];
  }
}

TEST(JsonWriterTest, TakeMovesTheDocumentOut) {
  JsonWriter w;
  w.begin_array();
  w.value(7);
  w.end_array();
  EXPECT_EQ(w.take(), "[7]");
}

// ---------------------------------------------------------------- scalars

TEST(JsonWriterTest, Integers) {
  JsonWriter w;
  w.begin_array();
  w.value(0);
  w.value(-5);
  w.value(std::numeric_limits<int64_t>::min());
  w.value(std::numeric_limits<int64_t>::max());
  w.value(std::numeric_limits<uint64_t>::max());
  w.value(static_cast<uint64_t>(0));
  w.end_array();
  EXPECT_EQ(w.str(), "[0,-5,-9223372036854775808,9223372036854775807,18446744073709551615,0]");
}

TEST(JsonWriterTest, FiniteDoublesRoundTripClosely) {
  const double values[] = {0.0,  0.5,        -0.25,  1.0,     3.14159265358979,
                           1e-7, 123456.789, 2.5e20, -1e-300, 1e300};
  for (double d : values) {
    JsonWriter w;
    w.value(d);
    std::string error;
    const auto v = JsonParser::parse(w.str(), &error);
    ASSERT_TRUE(v.has_value()) << error << " for " << w.str();
    ASSERT_TRUE(v->is_number()) << w.str();
    EXPECT_NEAR(v->number, d, std::fabs(d) * 1e-8) << w.str();
  }
  JsonWriter exact;
  exact.begin_array();
  exact.value(0.5);
  exact.value(-0.25);
  exact.value(1.0);
  exact.end_array();
  EXPECT_EQ(exact.str(), "[0.5,-0.25,1]");
}

TEST(JsonWriterTest, NonFiniteDoublesAreNull) {
  JsonWriter w;
  w.begin_object();
  w.key("nan");
  w.value(std::numeric_limits<double>::quiet_NaN());
  w.key("inf");
  w.value(std::numeric_limits<double>::infinity());
  w.key("ninf");
  w.value(-std::numeric_limits<double>::infinity());
  w.key("after");
  w.value(1.5);
  w.end_object();
  EXPECT_EQ(w.str(), R"({"nan":null,"inf":null,"ninf":null,"after":1.5})");

  JsonWriter arr;
  arr.begin_array();
  arr.value(std::numeric_limits<double>::quiet_NaN());
  arr.value(std::numeric_limits<double>::infinity());
  arr.value(2.0);
  arr.end_array();
  EXPECT_EQ(arr.str(), "[null,null,2]");
}

TEST(JsonWriterTest, StringOverloadsAgree) {
  JsonWriter w;
  w.begin_array();
  w.value("abc");
  w.value(std::string_view("abc"));
  w.value(std::string("abc"));
  w.end_array();
  EXPECT_EQ(w.str(), R"(["abc","abc","abc"])");
}

// ---------------------------------------------------------------- escaping

TEST(JsonWriterTest, EscapesQuotesAndBackslashes) {
  EXPECT_EQ(escaped(R"(say "hi")"), R"("say \"hi\"")");
  EXPECT_EQ(escaped(R"(C:\dir\file)"), R"("C:\\dir\\file")");
  EXPECT_EQ(escaped("\\\""), R"("\\\"")");
  EXPECT_EQ(escaped("a/b"), R"("a/b")");  // '/' needs no escape
  EXPECT_EQ(escaped(""), R"("")");
}

TEST(JsonWriterTest, EscapesControlCharacters) {
  EXPECT_EQ(escaped("a\nb"), R"("a\nb")");
  EXPECT_EQ(escaped("\r\t"), R"("\r\t")");
  EXPECT_EQ(escaped("\b"), R"("\u0008")");
  EXPECT_EQ(escaped("\f"), R"("\u000c")");
  EXPECT_EQ(escaped("\x01"), R"("\u0001")");
  EXPECT_EQ(escaped("\x1f"), R"("\u001f")");
  EXPECT_EQ(escaped("\x7f"), R"("\u007f")");
  EXPECT_EQ(escaped(std::string_view("a\0b", 3)), R"("a\u0000b")");
  EXPECT_EQ(escaped(" ~"), R"(" ~")");  // printable ASCII bounds stay as they are

  // Every byte below 0x20 comes back unchanged after a JSON decode.
  std::string all_controls;
  for (int c = 0; c < 0x20; ++c) all_controls.push_back(static_cast<char>(c));
  const std::string out = escaped(all_controls);
  for (char c : out.substr(1, out.size() - 2)) {
    EXPECT_GE(static_cast<unsigned char>(c), 0x20) << "raw control byte in output";
  }
  EXPECT_EQ(decode_string_literal(out), all_controls);
}

TEST(JsonWriterTest, AppendEscapedAppends) {
  std::string out = "prefix:";
  JsonWriter::append_escaped(out, "x\"y");
  EXPECT_EQ(out, R"(prefix:"x\"y")");
}

TEST(JsonWriterTest, KeysAreEscapedToo) {
  JsonWriter w;
  w.begin_object();
  w.key("a\"b\n\xC3");
  w.value(1);
  w.end_object();
  EXPECT_EQ(w.str(), "{\"a\\\"b\\n\\ufffd\":1}");
  const auto v = JsonParser::parse(w.str());
  ASSERT_TRUE(v.has_value());
  ASSERT_EQ(v->object.size(), 1u);
  EXPECT_EQ(v->object[0].first, "a\"b\n" + kReplacement);
}

// ---------------------------------------------------------------- UTF-8

TEST(JsonWriterTest, ValidUtf8IsWrittenAsAsciiEscapes) {
  const std::string samples[] = {
      "\xC2\x80",           // U+0080, smallest 2-byte
      "\xC3\xA9t\xC3\xA9",  // "été"
      "\xDF\xBF",           // U+07FF, largest 2-byte
      "\xE0\xA0\x80",       // U+0800, smallest 3-byte
      "\xE2\x82\xAC",       // U+20AC euro sign
      "\xED\x9F\xBF",       // U+D7FF, just below the surrogates
      "\xEE\x80\x80",       // U+E000, just above the surrogates
      "\xEF\xBF\xBD",       // U+FFFD itself
      "\xEF\xBF\xBF",       // U+FFFF
      "\xF0\x90\x80\x80",   // U+10000, smallest 4-byte
      "\xF0\x9F\x98\x80",   // U+1F600 emoji
      "\xF4\x8F\xBF\xBF",   // U+10FFFF, the last code point
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E/\xF0\x9F\x90\x8D.py",  // mixed path
  };
  for (const std::string& s : samples) {
    EXPECT_EQ(escaped(s), in_quotes(u_escaped(s))) << "input bytes: " << s;
    EXPECT_EQ(decode_string_literal(escaped(s)), s);
  }
  EXPECT_EQ(escaped("\xC3\xA9t\xC3\xA9"), R"("\u00e9t\u00e9")");
  EXPECT_EQ(escaped("\xF0\x9F\x98\x80"), R"("\ud83d\ude00")");
}

struct InvalidCase {
  const char* what;
  std::string input;
  std::string expected_inner;  // between the quotes
};

TEST(JsonWriterTest, InvalidUtf8IsReplacedByteByByte) {
  const std::string R = kReplacement;
  const InvalidCase cases[] = {
      {"lone continuation byte", "\x80", R},
      {"lone continuation inside ASCII",
       "a\xBF"
       "b",
       "a" + R + "b"},
      {"two continuation bytes", "\x80\x80", R + R},
      {"truncated 2-byte at end", "x\xC3", "x" + R},
      {"truncated 3-byte at end", "\xE2\x82", R + R},
      {"truncated 4-byte at end", "\xF0\x9F\x98", R + R + R},
      {"truncated 3-byte before ASCII",
       "\xE2\x82"
       "A",
       R + R + "A"},
      {"truncated 4-byte before valid 2-byte", "\xF0\x9F\xC3\xA9", R + R + "\xC3\xA9"},
      {"overlong '/' (2 bytes)", "\xC0\xAF", R + R},
      {"overlong NUL (2 bytes)", "\xC0\x80", R + R},
      {"overlong U+007F (C1)", "\xC1\xBF", R + R},
      {"overlong '/' (3 bytes)", "\xE0\x80\xAF", R + R + R},
      {"overlong U+07FF (3 bytes)", "\xE0\x9F\xBF", R + R + R},
      {"overlong '/' (4 bytes)", "\xF0\x80\x80\xAF", R + R + R + R},
      {"overlong U+FFFF (4 bytes)", "\xF0\x8F\xBF\xBF", R + R + R + R},
      {"high surrogate U+D800", "\xED\xA0\x80", R + R + R},
      {"low surrogate U+DFFF", "\xED\xBF\xBF", R + R + R},
      {"CESU-8 surrogate pair", "\xED\xA0\xBD\xED\xB8\x80", repeat(R, 6)},
      {"past U+10FFFF", "\xF4\x90\x80\x80", R + R + R + R},
      {"F5 lead byte", "\xF5\x80\x80\x80", R + R + R + R},
      {"FE and FF", "\xFE\xFF", R + R},
      {"F8 5-byte form", "\xF8\x88\x80\x80\x80", repeat(R, 5)},
      {"invalid then valid", "\x80\xE2\x82\xAC", R + "\xE2\x82\xAC"},
      {"Latin-1 file name", "caf\xE9.py", "caf" + R + ".py"},
  };
  for (const InvalidCase& c : cases) {
    const std::string out = escaped(c.input);
    EXPECT_EQ(out, in_quotes(u_escaped(c.expected_inner))) << c.what;
    EXPECT_TRUE(is_ascii(out)) << c.what;
    EXPECT_EQ(decode_string_literal(out), c.expected_inner) << c.what;
  }
}

TEST(JsonWriterTest, NeverReadsPastTheEndOfTheInput) {
  // The bytes after the view would complete the sequence; they must not be looked at.
  const std::string buffer = "\xE2\x82\xAC\xF0\x9F\x98\x80";
  const std::string r = u_escaped(kReplacement);
  EXPECT_EQ(escaped(std::string_view(buffer).substr(0, 2)), in_quotes(r + r));
  EXPECT_EQ(escaped(std::string_view(buffer).substr(0, 1)), in_quotes(r));
  EXPECT_EQ(escaped(std::string_view(buffer).substr(3, 3)), in_quotes(repeat(r, 3)));
  EXPECT_EQ(escaped(std::string_view(buffer).substr(0, 6)), in_quotes("\\u20ac" + repeat(r, 3)));
}

TEST(JsonWriterTest, RandomValidUtf8RoundTrips) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> len_dist(0, 40);
  std::uniform_int_distribution<int> plane_dist(0, 3);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s;
    const int n = len_dist(rng);
    for (int k = 0; k < n; ++k) {
      uint32_t cp = 0;
      switch (plane_dist(rng)) {
        case 0:
          cp = std::uniform_int_distribution<uint32_t>(0, 0x7F)(rng);
          break;
        case 1:
          cp = std::uniform_int_distribution<uint32_t>(0x80, 0x7FF)(rng);
          break;
        case 2:
          do {
            cp = std::uniform_int_distribution<uint32_t>(0x800, 0xFFFF)(rng);
          } while (cp >= 0xD800 && cp <= 0xDFFF);
          break;
        default:
          cp = std::uniform_int_distribution<uint32_t>(0x10000, 0x10FFFF)(rng);
      }
      spyglass_test::append_utf8(s, cp);
    }
    ASSERT_TRUE(is_valid_utf8(s));
    const std::string out = escaped(s);
    ASSERT_EQ(decode_string_literal(out), s) << "iteration " << iter;
  }
}

TEST(JsonWriterTest, RandomBytesAlwaysGiveValidJsonStrings) {
  std::mt19937 rng(777);
  std::uniform_int_distribution<int> len_dist(0, 64);
  std::uniform_int_distribution<int> byte_dist(0, 255);
  for (int iter = 0; iter < 5000; ++iter) {
    std::string s;
    const int n = len_dist(rng);
    for (int k = 0; k < n; ++k) s.push_back(static_cast<char>(byte_dist(rng)));
    const std::string out = escaped(s);
    ASSERT_TRUE(is_ascii(out)) << "iteration " << iter;
    const std::string decoded = decode_string_literal(out);
    ASSERT_TRUE(is_valid_utf8(decoded)) << "iteration " << iter;
    if (is_valid_utf8(s)) {
      ASSERT_EQ(decoded, s) << "valid input was altered, iteration " << iter;
    }
  }
}

// ---------------------------------------------------------------- raw()

TEST(JsonWriterTest, RawInsertsVerbatimWithCommas) {
  JsonWriter w;
  w.begin_array();
  w.value(1);
  w.raw(R"({"x":[1,"two"]})");
  w.raw("null");
  w.value(2);
  w.end_array();
  EXPECT_EQ(w.str(), R"([1,{"x":[1,"two"]},null,2])");
}

TEST(JsonWriterTest, RawAsObjectMemberValue) {
  JsonWriter w;
  w.begin_object();
  w.key("k");
  w.raw("[true,false]");
  w.key("n");
  w.value(1);
  w.end_object();
  EXPECT_EQ(w.str(), R"({"k":[true,false],"n":1})");
}

TEST(JsonWriterTest, RawDoesNotEscapeOrValidate) {
  // The caller vouches for the text: raw() must not touch it.
  JsonWriter w;
  w.begin_array();
  w.raw("\"caf\xC3\xA9\\n\"");
  w.end_array();
  EXPECT_EQ(w.str(), "[\"caf\xC3\xA9\\n\"]");
}

TEST(JsonWriterTest, RawAsFirstAndOnlyValue) {
  JsonWriter w;
  w.raw("{\"a\":1}");
  EXPECT_EQ(w.str(), "{\"a\":1}");
}

TEST(JsonWriterTest, FixedPlacesDropTrailingZerosAndNeverUseExponents) {
  JsonWriter w;
  w.begin_array();
  w.value_fixed(0.38707542419, 4);
  w.value_fixed(2.0, 6);
  w.value_fixed(1.25, 6);
  w.value_fixed(123456789.0, 2);
  w.value_fixed(1e-9, 6);
  w.value_fixed(-0.00001, 2);
  w.value_fixed(1e20, 0);
  w.value_fixed(std::numeric_limits<double>::quiet_NaN(), 3);
  w.end_array();
  EXPECT_EQ(w.str(), "[0.3871,2,1.25,123456789,0,0,100000000000000000000,null]");
}

}  // namespace
}  // namespace spyglass
