// The arithmetic of byte-level Poisson sampling, as tcmalloc, Go and heapprofd do it: the
// bytes between two samples are drawn from an exponential distribution with mean R, so each
// allocation's chance of being sampled, and its weight, depend on its own size alone. Plain
// functions of plain state, inline: they run on the allocation path.
#pragma once

#include <cmath>
#include <cstdint>

namespace spyglass::shim {

// xorshift64: a per-thread generator that needs no lock and no allocation.
inline uint64_t next_random(uint64_t& state) {
  uint64_t x = state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  state = x;
  return x;
}

// Bytes until the next sample: an exponential draw with mean `rate`, at least 1.
inline int64_t exponential_countdown(uint64_t& rng, uint64_t rate) {
  const double u = (static_cast<double>(next_random(rng) >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  return static_cast<int64_t>(-std::log(u) * static_cast<double>(rate)) + 1;
}

// The weight of a sampled allocation of `size` bytes at rate `rate` > 0: its size over its
// chance of being sampled, 1 - e^(-size/rate), which makes every estimate unbiased.
inline double byte_sample_weight(uint64_t size, uint64_t rate) {
  if (size == 0) return 0;
  const double s = static_cast<double>(size);
  return s / -std::expm1(-s / static_cast<double>(rate));
}

}  // namespace spyglass::shim
