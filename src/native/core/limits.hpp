// The defaults and bounds of what a user can set, and the sizes a profile is bounded by:
// defined here once, used by the collector, and exported by the extension module so that
// the Python layer (command line, API, validation) never writes them again.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spyglass {

// CPU time between two samples of a thread.
inline constexpr uint64_t kDefaultIntervalNs = 10'000'000;
inline constexpr uint64_t kMinIntervalNs = 1'000'000;
inline constexpr uint64_t kMaxIntervalNs = 10'000'000'000;
// The control thread's tick (draining, finding threads, the journal, the wait engine's
// look) comes every interval, but no more often than this. A tick costs its wake-up, tens
// of microseconds whatever it finds (docs/cost-model.md): at a 1 ms interval ticking every
// interval took 4 % of a busy program's CPU against 1.4 % at 10 ms, for nothing the
// samples need (a thread's ring holds 32 of them, and waits are measured by clocks, not by
// counting ticks).
inline constexpr uint64_t kMinTickNs = 10'000'000;

// The memory sampling rate: mean bytes allocated between two samples at the start of a run
// (docs/memory-profiling.md says how it was chosen), and what a user may ask for.
inline constexpr uint64_t kDefaultMemoryWindowBytes = 64 * 1024;
inline constexpr uint64_t kMinMemoryWindowBytes = 4096;
inline constexpr uint64_t kMaxMemoryWindowBytes = uint64_t{1} << 40;
// The mean bytes copied between two copy samples (shim/hook_state.hpp, draw_copy_due).
inline constexpr uint64_t kDefaultCopyWindowBytes = 2 * 1024 * 1024;

// The most points a line's footprint series and the run's may have in a profile (the
// format's bounds), and the most a line's is given when written: its sparkline is 64
// pixels wide in the HTML report and narrower in the terminal, and at the bound the lines'
// timelines were over half of a typical profile's bytes.
inline constexpr size_t kLineTimelinePoints = 100;
inline constexpr size_t kLineTimelinePointsWritten = 64;
inline constexpr size_t kRunTimelinePoints = 200;

// Threads a run follows one by one: the signal path's thread slots and the allocator hooks'
// counters each have this many entries. Both kinds of stack walk index their fault guards
// by their own slot, and the two numberings differ (one thread's sampler slot may be
// another's counter slot), so platform/fault_guard.hpp's table is two ranges of this size.
inline constexpr uint32_t kMaxThreads = 4096;

}  // namespace spyglass
