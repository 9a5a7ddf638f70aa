// The memory engine: the allocator hooks (shim/, started through memory_glue.hpp) sample
// allocations and their frees into a ring; the engine drains it. Allocations are resolved
// to stacks like CPU samples, so lines, functions, threads and flame graphs all carry their
// bytes; the figures that are not sums (footprints, live bytes, leaks) go to MemoryStats.
// Copies come through the same ring and go to the copy engine.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "../core/memory_record.hpp"
#include "../core/memory_stats.hpp"
#include "../core/reserved_memory.hpp"
#include "../core/stack_table.hpp"
#include "../shim/memory_hooks.hpp"
#include "engine.hpp"
#include "held_records.hpp"

namespace spyglass::cpython {

class CopyEngine;

class MemoryEngine final : public Engine {
 public:
  MemoryEngine(const EngineContext& context, const shim::HookOptions& options, CopyEngine& copies)
      : Engine(context), options_(options), copies_(copies) {}

  const char* name() const override { return "memory"; }
  void start(uint64_t start_ns) override;
  void begin() override;
  void stop() override;
  void finish() override;
  // On a code death it also waits for the records other threads are still writing. Every
  // kReservedEveryNs, and at the end, reservations are measured.
  void drain(Drain why) override;
  void upkeep() override;
  void thread_ended(const ProfiledThread& thread, const ThreadEnd& how) override;
  void describe(RunInfo& run) const override;

  const MemoryStats& stats() const { return stats_; }

 private:
  // Takes the ring's records, holding back those of a library's own thread that no
  // caller's wait lends a line yet, for twice the lend window (or until `release_all`):
  // held_records.hpp.
  void drain_records(bool wait_for_claimed, bool release_all);
  void hold(const MemoryRecord& rec, const FrameKey* keys, uint64_t now);
  // Takes the held records that can go (`all`: all; `oldest`: the oldest allocation too).
  void release_held(uint64_t now, bool all, bool oldest);
  // Adds one record to the figures; false (nothing added) when it is to be held.
  // `held_epoch`: a held allocation's HeldRecords::Entry::epoch, else kNotHeld.
  bool take(const MemoryRecord& rec, FrameKey* keys, uint64_t now, bool may_hold,
            uint32_t held_epoch);
  // Where CPU and wait samples found the program's outermost codes, into the figures.
  void take_outer_sightings();
  uint64_t dropped() const;
  // What of the allocators' reservations is resident now, charged (reserved_memory.hpp).
  void measure_reserved();

  static constexpr uint64_t kReservedEveryNs = 100'000'000;
  static constexpr int32_t kPiecesTid = -1;  // no thread's: MemoryStats's executions

  shim::HookOptions options_;
  CopyEngine& copies_;
  MemoryStats stats_;
  ReservedMemory reserved_;
  uint64_t reserved_at_ns_ = 0;
  std::vector<unsigned char> pages_;  // mincore's answer, kept for the next measurement
  std::vector<ReservedMemory::Change> changes_;
  HeldRecords held_;
  MemoryRecord scratch_;
  int32_t main_tid_ = 0;  // the process's main thread, as of the drain
  std::unordered_map<int32_t, uint64_t>
      last_alloc_ns_;  // each thread's latest sample  // a held record, restored
                       // (2 KB: not on the stack each time)
  uint32_t epoch_ = 0;
  uint64_t dropped_base_ = 0;
  bool finished_ = false;
  uint64_t dropped_ = 0;  // once finished
};

}  // namespace spyglass::cpython
