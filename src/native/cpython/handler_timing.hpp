// The sample handler's own cost, measured exactly for bench/costs: at most a few hundred
// samples a second reach a thread (CPU timers fire on the scheduler tick), so a handler of a
// few microseconds slows a program by well under 0.1 %, too little to infer from timing
// whole runs on a shared machine. Running the handler directly, as the timer signal would,
// times it alone.
#pragma once

#include <cstdint>

namespace spyglass::cpython {

struct HandlerTiming {
  uint64_t calls = 0;       // handler runs that wrote a sample
  uint64_t handler_ns = 0;  // thread CPU time of those runs
  uint64_t clock_ns = 0;    // what the same number of clock reads alone took, to subtract
};

// Runs the handler `calls` times on the calling thread, which must hold the GIL and be
// sampled by a running profiler (otherwise returns calls == 0). Waits between bursts for the
// control thread to drain the thread's ring, so that every run writes a record as a real
// sample would, instead of finding the ring full.
// With `native_context`, the handler finds the registers of this function's own frame, as
// a sample taken inside a C function called from Python would: it unwinds the native
// callers up to the interpreter. Without, it finds none (a sample with nothing to unwind).
HandlerTiming time_sample_handler(uint32_t calls, bool native_context = false);

}  // namespace spyglass::cpython
