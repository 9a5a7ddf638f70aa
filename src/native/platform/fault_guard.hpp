// Reading memory that may not be mapped, from a signal handler. An interrupted thread can
// be caught half-way through setting up a frame (3.11 and 3.12 publish a new C frame before
// its current-frame field is written), so a walk may meet a wild pointer; inside a guarded
// region a fault jumps back out instead of killing the process. Faults anywhere else go to
// whatever handled them before (faulthandler, the default action).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <csetjmp>
#include <cstddef>
#include <cstdint>

namespace spyglass::platform {

struct FaultGuard {
  std::atomic<pid_t> tid{0};  // the thread inside the guarded region, 0 when none
  // Value-initialised so that a table of guards is constant-initialised (zeroed .bss, no
  // code at load): left indeterminate, it made every process that loads the extension
  // write 1.7 MB of guards at start, page by page.
  sigjmp_buf env{};
};

// Two ranges, one per kind of stack walk on the program's threads (core/limits.hpp's
// kMaxThreads each; the platform layer sees no core header, so the extension asserts the
// size where it splits them), then a few for the profiler's own threads.
inline constexpr uint32_t kMaxFaultGuards = 8192 + 8;

// Installs the SIGSEGV/SIGBUS handler if it is not already the first in line. Not
// async-signal-safe; call it before the guarded code can run.
bool install_fault_handler();

// Whether our handler is still the first for both signals: no handler was installed after
// it (faulthandler's is, when the program or pytest enables it). Async-signal-safe.
bool fault_handler_first();

// On a thread started with every signal blocked (the profiler's own threads are): lets a
// fault reach the handler. A fault that comes while SIGSEGV is blocked kills the process
// whatever handler is installed, guard or none. Call it before the thread's first guard.
void unblock_fault_signals();

// The guard with this index (callers give each thread its own, or use one only under a
// lock: the wait engine's, from the control thread and its own). Async-signal-safe.
FaultGuard& fault_guard(uint32_t index);

// Usage, in a signal handler, on thread `tid`:
//   FaultGuard& g = fault_guard(i);
//   g.tid.store(tid);
//   if (sigsetjmp(g.env, 0) == 0) { ...reads... } else { ...a read faulted... }
//   g.tid.store(0);
void enter_guard(FaultGuard& g, pid_t tid);
void leave_guard(FaultGuard& g);

// Copies `size` bytes at `address` of this process (`self`, its pid) into `out` without
// touching them: false where they are not mapped, or where the kernel refuses the read (as
// some sandboxes do). Async-signal-safe, and a system call each time. For reads of memory
// that is often gone, where a guard is not enough: with another SIGSEGV handler first in
// line (faulthandler's, which pytest enables), a fault goes to that one first, and it
// reports a crash before ours can jump out.
bool read_own_memory(pid_t self, const void* address, void* out, size_t size);

}  // namespace spyglass::platform
