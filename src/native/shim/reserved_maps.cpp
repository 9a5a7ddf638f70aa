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
// One past the highest slot ever listed: slots are taken lowest first, so the hooks on
// every munmap and MAP_FIXED mmap scan this many, none in a program no allocator of which
// reserves (instead of 64 slots, 2.5 KB of loads, on each).
constinit std::atomic<uint32_t> g_slots_used{0};

uint32_t slots_used() { return g_slots_used.load(std::memory_order_acquire); }

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
  for (uint32_t i = 0; i < kReservedSlots; ++i) {
    Slot& slot = g_slots[i];
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
    // Counted in before it lists anything: a hook that reads the count then finds it.
    uint32_t used = g_slots_used.load(std::memory_order_relaxed);
    while (used < i + 1 &&
           !g_slots_used.compare_exchange_weak(used, i + 1, std::memory_order_release)) {
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
  const uint32_t used = slots_used();
  if (used == 0) return;
  const uintptr_t end = page_up(block + length);
  for (uint32_t i = 0; i < used; ++i) {
    Slot& slot = g_slots[i];
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
  const uint32_t used = slots_used();
  const uint32_t epoch = g_epoch.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < used; ++i) {
    const Slot& slot = g_slots[i];
    const uintptr_t start = slot.start.load(std::memory_order_relaxed);
    if (start != 0 && slot.epoch.load(std::memory_order_relaxed) == epoch && block >= start &&
        block + length <= start + slot.length.load(std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

void clear_reserved() {
  const uint32_t used = slots_used();
  for (uint32_t i = 0; i < used; ++i) {
    Slot& slot = g_slots[i];
    const uint32_t seq = lock(slot);
    slot.start.store(0, std::memory_order_relaxed);
    unlock(slot, seq);
  }
}

void reserved_after_fork_child() {
  // A slot another thread was changing as the process forked stays taken in the child,
  // where that thread does not exist: the next hook to meet it would wait for ever. Its
  // contents may be half-written, so it lists nothing.
  const uint32_t used = slots_used();
  for (uint32_t i = 0; i < used; ++i) {
    Slot& slot = g_slots[i];
    const uint32_t seq = slot.seq.load(std::memory_order_relaxed);
    if ((seq & 1) == 0) continue;
    slot.start.store(0, std::memory_order_relaxed);
    slot.seq.store(seq + 1, std::memory_order_release);
  }
}

}  // namespace hooks

size_t reserved_maps(ReservedMap* out, size_t max) {
  const uint32_t epoch = hooks::g_epoch.load(std::memory_order_acquire);
  size_t n = 0;
  const uint32_t used = slots_used();
  for (uint32_t i = 0; i < used && n < max; ++i) {
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
