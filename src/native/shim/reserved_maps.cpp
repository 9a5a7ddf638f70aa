// The reservations mapped now (reserved_maps.hpp): a small table the hooks keep and the
// collector reads. Reservations are few (an allocator's arenas and segments: tens in a
// run) and mapped seldom, so a fixed table scanned whole serves. Each slot has a sequence
// number, odd while a thread changes the slot: a writer takes it with a compare-and-swap
// (another writer holds it for a few stores at most), and the collector keeps what it
// read of a slot only if the number was even and unchanged across the read, and across
// its measurement of the range (addresses are reused: a range read half-changed could
// measure some other mapping).
#include "reserved_maps.hpp"

#include <unistd.h>

#include "hook_state.hpp"

namespace spyglass::shim {

namespace {

struct Slot {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> epoch{0};   // the start() it was listed in: an older one is stale
  std::atomic<uintptr_t> start{0};  // 0: free
  std::atomic<size_t> length{0};
  std::atomic<uint32_t> id{0};
};

constinit Slot g_slots[kReservedSlots];

// Takes the slot for a change; the sequence number it had, to give back plus two.
uint32_t lock(Slot& slot) {
  for (;;) {
    uint32_t seq = slot.seq.load(std::memory_order_relaxed);
    if ((seq & 1) == 0 && slot.seq.compare_exchange_weak(seq, seq + 1, std::memory_order_acquire)) {
      return seq;
    }
  }
}
void unlock(Slot& slot, uint32_t seq) { slot.seq.store(seq + 2, std::memory_order_release); }

uintptr_t page_up(uintptr_t address) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return (address + page - 1) & ~(page - 1);
}

}  // namespace

namespace hooks {

void note_reserved(ThreadState& t, uintptr_t block, size_t length) {
  const uint32_t epoch = gate_epoch(t);
  for (Slot& slot : g_slots) {
    if (slot.start.load(std::memory_order_relaxed) != 0 &&
        slot.epoch.load(std::memory_order_relaxed) == epoch) {
      continue;  // in use (a slot of an earlier start() is free)
    }
    const uint32_t seq = lock(slot);
    if (slot.start.load(std::memory_order_relaxed) != 0 &&
        slot.epoch.load(std::memory_order_relaxed) == epoch) {
      unlock(slot, seq);  // taken meanwhile
      continue;
    }
    // Listed before its record is queued: the collector takes a reservation its records
    // name but the table does not list for one unmapped since.
    const uint32_t id = g_next_sample.fetch_add(1, std::memory_order_relaxed);
    slot.epoch.store(epoch, std::memory_order_relaxed);
    slot.length.store(length, std::memory_order_relaxed);
    slot.id.store(id, std::memory_order_relaxed);
    slot.start.store(block, std::memory_order_relaxed);
    unlock(slot, seq);
    emit_reservation(t, id);  // with no room for it, listed but never measured
    return;
  }
  // No slot free (64 reservations mapped): counted as any mapping is.
  sample_alloc(t, block, length, /*python=*/false);
}

void unmap_reserved(uintptr_t block, size_t length) {
  const uintptr_t end = page_up(block + length);
  for (Slot& slot : g_slots) {
    const uintptr_t seen = slot.start.load(std::memory_order_relaxed);
    if (seen == 0 || end <= seen || block >= seen + slot.length.load(std::memory_order_relaxed)) {
      continue;  // free, or no overlap
    }
    const uint32_t seq = lock(slot);
    const uintptr_t start = slot.start.load(std::memory_order_relaxed);
    const size_t size = slot.length.load(std::memory_order_relaxed);
    if (start != 0 && end > start && block < start + size) {
      if (block > start && end < start + size) {
        slot.start.store(0, std::memory_order_relaxed);  // a hole: no longer one range
      } else if (block <= start && end < start + size) {
        // Its head: allocators map more than they need to align it, then trim.
        slot.length.store(start + size - end, std::memory_order_relaxed);
        slot.start.store(end, std::memory_order_relaxed);
      } else if (block > start) {
        slot.length.store(block - start, std::memory_order_relaxed);  // its tail
      } else {
        slot.start.store(0, std::memory_order_relaxed);  // gone whole
      }
    }
    unlock(slot, seq);
  }
}

bool inside_reserved(uintptr_t block, size_t length) {
  const uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  for (const Slot& slot : g_slots) {
    const uintptr_t start = slot.start.load(std::memory_order_relaxed);
    if (start != 0 && slot.epoch.load(std::memory_order_relaxed) == epoch && block >= start &&
        block + length <= start + slot.length.load(std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

void clear_reserved() {
  for (Slot& slot : g_slots) {
    const uint32_t seq = lock(slot);
    slot.start.store(0, std::memory_order_relaxed);
    unlock(slot, seq);
  }
}

}  // namespace hooks

size_t reserved_maps(ReservedMap* out, size_t max) {
  const uint32_t epoch = hooks::g_epoch.load(std::memory_order_acquire);
  size_t n = 0;
  for (uint32_t i = 0; i < kReservedSlots && n < max; ++i) {
    const Slot& slot = g_slots[i];
    const uint32_t seq = slot.seq.load(std::memory_order_acquire);
    if ((seq & 1) != 0) continue;  // being changed: read at the next measurement
    const ReservedMap map{slot.start.load(std::memory_order_relaxed),
                          slot.length.load(std::memory_order_relaxed),
                          slot.id.load(std::memory_order_relaxed), i, seq};
    const bool current = slot.epoch.load(std::memory_order_relaxed) == epoch;
    std::atomic_thread_fence(std::memory_order_acquire);
    if (map.start == 0 || !current || slot.seq.load(std::memory_order_relaxed) != seq) continue;
    out[n++] = map;
  }
  return n;
}

bool still_listed(const ReservedMap& map) {
  std::atomic_thread_fence(std::memory_order_acquire);
  return g_slots[map.slot].seq.load(std::memory_order_relaxed) == map.seq;
}

void drop_reserved(const ReservedMap& map) {
  Slot& slot = g_slots[map.slot];
  const uint32_t seq = lock(slot);
  if (seq == map.seq) slot.start.store(0, std::memory_order_relaxed);  // unchanged since
  unlock(slot, seq);
}

uint32_t take_sample_id() { return hooks::g_next_sample.fetch_add(1, std::memory_order_relaxed); }

int64_t add_to_footprint(int64_t delta) {
  const int64_t after = hooks::g_footprint.fetch_add(delta, std::memory_order_acq_rel) + delta;
  int64_t peak = hooks::g_peak.load(std::memory_order_relaxed);
  while (after > peak && !hooks::g_peak.compare_exchange_weak(peak, after)) {
  }
  return after;
}

}  // namespace spyglass::shim
