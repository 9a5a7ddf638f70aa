// Address space an allocator reserves, as opposed to memory it uses. mimalloc (pyarrow's
// pool, and so pandas's string columns) maps a 1 GiB arena and 2-4 MiB segments with
// MAP_NORESERVE, touches what it uses and gives pages back with madvise, never unmapping
// them; others reserve with PROT_NONE and commit later. Counted whole when mapped, as any
// anonymous mapping is, a pandas read_csv showed 1,068 MB live at its line where the
// process's resident size grew by 55 MB. Such a mapping is counted by what of it is
// resident instead: the hooks note it (with its stack, in a record of weight 0), and the
// collector measures it now and then (mincore) and charges growth to that stack, shrinking
// as pages are given back (cpython/reserved_memory.hpp).
#pragma once

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace spyglass::shim {

// Smaller reservations are counted as mapped, as any anonymous mapping is: too small to
// matter, and a thread's stack guard or a small arena is no allocator's reserve.
inline constexpr size_t kMinReservedBytes = size_t{1} << 20;
inline constexpr size_t kReservedSlots = 64;

inline bool is_reservation(size_t length, int prot, int flags) {
  return (flags & MAP_ANONYMOUS) != 0 && length >= kMinReservedBytes &&
         ((flags & MAP_NORESERVE) != 0 || prot == PROT_NONE);
}

struct ReservedMap {
  uintptr_t start = 0;
  size_t length = 0;
  uint32_t id = 0;  // the sample id of its record
  uint32_t slot = 0;
  uint32_t seq = 0;  // the slot's sequence number as read
};

// The reservations mapped now, at most `max` (the collector's thread). A slot being
// changed is left out: read at the next measurement.
size_t reserved_maps(ReservedMap* out, size_t max);
// Whether `map`'s slot is unchanged since it was read: a measurement of its range taken
// meanwhile is of it.
bool still_listed(const ReservedMap& map);
// No longer lists `map`, if unchanged since read: its range cannot be measured (a part of
// it was unmapped without the hooks seeing it).
void drop_reserved(const ReservedMap& map);
// For bytes the collector finds resident in (or given back from) a reservation: a sample
// id, and the footprint after `delta` is added to it.
uint32_t take_sample_id();
int64_t add_to_footprint(int64_t delta);

}  // namespace spyglass::shim
