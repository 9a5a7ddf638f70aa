// A thread's CPU-time sampling clock made of a perf software event (task-clock) rather than
// a POSIX CPU-time timer, where the kernel allows it (threads.hpp chooses).
//
// A POSIX CPU-time timer is checked at the scheduler's tick (4 ms at 250 Hz): it fires only
// at a tick that finds its thread running. A thread that runs in short bursts starting
// right after a tick (preempted, and given the CPU back at a tick) is never found in them:
// a worker alternating 1.8 ms of Python with 2.4 ms of zlib.compress (the GIL released)
// beside a busy thread had its zlib line at 0.2x its CPU and its Python at 2x. The perf
// event's period runs on a high-resolution timer while its thread runs, and fires where
// the period ends, whatever the tick.
//
// Its signal (F_SETSIG) carries the descriptor, not a value: each descriptor's cookie is
// kept here for the signal handler. Not available: perf_event_paranoid above 2 for an
// unprivileged process (Debian's and Ubuntu's default), a container's seccomp filter, a
// queue of pending signals half full, or more than kMaxPerfClocks threads at once (a
// descriptor each).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>

namespace spyglass::platform {

inline constexpr int kMaxPerfClockFd = 1024;  // high_fd.hpp keeps ours below 1024
inline constexpr int kMaxPerfClocks = 64;     // descriptors spyglass may hold for them

struct PerfClock {
  int fd = -1;
  uint64_t id = 0;
};

// Sends `signo` to thread `tid` every `period_ns` of its CPU time. False when the kernel
// refuses (asked once per process: the answer holds), or the descriptors are all in use.
bool arm_perf_clock(pid_t tid, int signo, uint32_t cookie, uint64_t period_ns, PerfClock* out);
// Its next signal after `first_ns` of the thread's CPU (0: a whole period), then every
// `period_ns` again.
bool rearm_perf_clock(const PerfClock& clock, uint64_t first_ns, uint64_t period_ns);
void close_perf_clock(PerfClock* clock);

// In the signal handler: the cookie of the clock whose signal `info` is (0: none of ours;
// is_stale_timer_cookie: one of a clock closed since, or another thread's, to drop), and,
// once the sample is taken, the clock set going again.
uint32_t perf_clock_cookie(const siginfo_t* info);
bool is_stale_timer_cookie(uint32_t cookie);
void perf_clock_sampled(const siginfo_t* info);

// Whether this process may open perf clocks (tried on the calling thread, then closed).
bool perf_clocks_allowed();

// In a forked child: the parent's clocks' descriptors closed.
void forget_perf_clocks_after_fork();

}  // namespace spyglass::platform
