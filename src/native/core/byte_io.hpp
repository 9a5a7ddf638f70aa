// Little binary encoding for files spyglass writes and reads back itself (the run journal):
// fixed-width little-endian integers, IEEE doubles and length-prefixed strings. The reader
// is bounds-checked and sticky: after one short read every later read fails too, so a
// caller checks ok() once, at the end of a record.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace spyglass {

class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}
  void u8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { le(v, 4); }
  void u64(uint64_t v) { le(v, 8); }
  void i64(int64_t v) { le(static_cast<uint64_t>(v), 8); }
  void f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    le(bits, 8);
  }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_->append(s.data(), s.size());
  }

 private:
  void le(uint64_t v, int n) {
    // One append of the whole integer: byte by byte, push_back's checks made the encoding
    // the control thread's largest cost under memory profiling.
    char bytes[8];
    for (int i = 0; i < n; ++i) bytes[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
    out_->append(bytes, static_cast<size_t>(n));
  }
  std::string* out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  size_t remaining() const { return in_.size() - pos_; }

  uint8_t u8() { return static_cast<uint8_t>(le(1)); }
  uint32_t u32() { return static_cast<uint32_t>(le(4)); }
  uint64_t u64() { return le(8); }
  int64_t i64() { return static_cast<int64_t>(le(8)); }
  double f64() {
    const uint64_t bits = le(8);
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  std::string str() {
    const uint32_t n = u32();
    if (!ok_ || n > remaining()) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::string_view take(size_t n) {
    if (!ok_ || n > remaining()) {
      ok_ = false;
      return {};
    }
    const std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  uint64_t le(int n) {
    if (!ok_ || static_cast<size_t>(n) > remaining()) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
      v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[pos_ + static_cast<size_t>(i)]))
           << (8 * i);
    }
    pos_ += static_cast<size_t>(n);
    return v;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace spyglass
