// Clocks the samplers read. Implemented per platform (linux/clock.cpp).
#pragma once

#include <sys/types.h>
#include <cstdint>

namespace spyglass::platform {

uint64_t monotonic_ns();
double unix_time_s();

// The calling thread's CPU time split into user and system, from the kernel's own
// per-thread accounting. Async-signal-safe.
struct CpuSplit {
  uint64_t user_ns = 0;
  uint64_t system_ns = 0;
};
CpuSplit this_thread_cpu();

// The calling thread's CPU time, to the nanosecond, from the scheduler's own clock: what
// short pieces of work are timed with. this_thread_cpu's rusage times are brought up to
// date only at the scheduler's ticks and switches here, so work shorter than a tick that
// makes no system call mostly reads as free (87 await scans of a run added up to 0.7 ms).
uint64_t this_thread_cpu_ns();

// Total CPU time (user + system) of thread `tid` of this process; false once it has exited.
bool thread_cpu_ns(pid_t tid, uint64_t* out);

pid_t current_tid();

// Time thread `tid` of this process has spent runnable but waiting for a CPU, in total
// (the kernel's schedstat run delay); false when the kernel does not say.
bool thread_run_delay_ns(pid_t tid, uint64_t* out);

// Whether thread `tid` of this process is asleep, waiting for something (not running, nor
// runnable and queued for a CPU); false when the kernel does not say.
bool thread_is_blocked(pid_t tid);

}  // namespace spyglass::platform
