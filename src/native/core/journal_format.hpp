// The run journal's record types and their encoding, shared by its writer and reader.
#pragma once

#include <cstdint>
#include <string>

#include "byte_io.hpp"
#include "native_costs.hpp"
#include "times.hpp"

namespace spyglass::journal {

inline constexpr char kMagic[] = "spyglass-journal";
inline constexpr uint32_t kVersion = 4;

enum Record : uint8_t {
  kHeader = 1,
  kCode = 2,            // a code object's id, file and name
  kStack = 3,           // a stack's index and frames (its times come separately)
  kTimes = 4,           // times added to a stack and to a thread
  kStackTimes = 5,      // times added to a stack only (dumps)
  kThreadTimes = 6,     // times added to a thread only (dumps)
  kMemoryState = 7,     // the whole MemoryStats (dumps)
  kMemoryAlloc = 8,     // one MemoryStats::add_alloc
  kSampledFree = 9,     // one MemoryStats::sampled_free
  kTick = 10,           // the end of a sampling interval
  kNative = 11,         // native time added to a stack's raw chain of native addresses
  kNativeObjects = 12,  // the loaded objects those addresses fall in
  kOuterSeen = 13,      // one MemoryStats::saw_outer
};

// A record is its type, its payload's length and the payload.
inline constexpr size_t kRecordHead = 5;

inline void begin(std::string* out, Record type, size_t* start) {
  out->push_back(static_cast<char>(type));
  out->append(4, '\0');
  *start = out->size();
}

inline void end(std::string* out, size_t start) {
  const auto n = static_cast<uint32_t>(out->size() - start);
  for (int i = 0; i < 4; ++i) (*out)[start - 4 + i] = static_cast<char>((n >> (8 * i)) & 0xFF);
}

// Times are mostly zeros (a CPU sample has no bytes, a memory sample no seconds): a mask
// says which fields follow.
inline void put_times(ByteWriter& w, const Times& t) {
  const uint64_t fields[] = {
      t.python_ns,   t.native_ns,  t.system_ns,       t.wait_ns,         t.samples,
      t.alloc_bytes, t.free_bytes, t.copy_bytes,      t.mem_samples,     t.alloc_python_bytes,
      t.gc_ns,       t.await_ns,   t.cuda_htod_bytes, t.cuda_dtoh_bytes, t.cuda_dtod_bytes};
  constexpr int kFields = sizeof fields / sizeof fields[0];
  uint32_t mask = 0;
  for (int i = 0; i < kFields; ++i) mask |= fields[i] != 0 ? 1u << i : 0;
  w.u32(mask);
  for (int i = 0; i < kFields; ++i) {
    if (fields[i] != 0) w.u64(fields[i]);
  }
}

inline Times get_times(ByteReader& r) {
  Times t;
  uint64_t* order[] = {&t.python_ns,       &t.native_ns,          &t.system_ns,      &t.wait_ns,
                       &t.samples,         &t.alloc_bytes,        &t.free_bytes,     &t.copy_bytes,
                       &t.mem_samples,     &t.alloc_python_bytes, &t.gc_ns,          &t.await_ns,
                       &t.cuda_htod_bytes, &t.cuda_dtoh_bytes,    &t.cuda_dtod_bytes};
  constexpr int kFields = sizeof order / sizeof order[0];
  const uint32_t mask = r.u32();
  for (int i = 0; i < kFields; ++i) {
    if ((mask & (1u << i)) != 0) *order[i] = r.u64();
  }
  return t;
}

}  // namespace spyglass::journal
