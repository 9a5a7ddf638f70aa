#include "handler_timing.hpp"

#include <Python.h>
#include <pthread.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstring>

#include "../core/thread_slots.hpp"
#include "../platform/clock.hpp"
#include "sampling_state.hpp"

namespace spyglass::cpython {

namespace {

uint64_t thread_cpu_ns(pid_t tid) {
  uint64_t ns = 0;
  platform::thread_cpu_ns(tid, &ns);
  return ns;
}

ThreadSlot* own_slot() {
  const pid_t tid = platform::current_tid();
  ThreadSlot* table = thread_slot_table();
  for (uint32_t i = 0; i < kMaxThreadSlots; ++i) {
    if (table[i].tid == tid && table[i].cookie.load(std::memory_order_acquire) != 0) {
      return &table[i];
    }
  }
  return nullptr;
}

// Gives the GIL up while the control thread drains the ring (it may need the GIL to do so).
bool wait_until_drained(const ThreadSlot& slot) {
  bool drained = slot.ring->empty();
  Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < 2000 && !drained; ++i) {
      usleep(500);
      drained = slot.ring->empty();
    }
  Py_END_ALLOW_THREADS
  return drained;
}

// The signals whose handler is the sampler's (the one it was installed on): a real tick
// that arrived during a synthetic call would run the handler inside it, on the same fault
// guard and ring slot, and leave the outer call unguarded and its record overwritten.
sigset_t sampling_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int signo = SIGRTMIN; signo <= SIGRTMAX; ++signo) {
    struct sigaction current {};
    if (sigaction(signo, nullptr, &current) == 0 && (current.sa_flags & SA_SIGINFO) != 0 &&
        current.sa_sigaction == on_sample_signal) {
      sigaddset(&set, signo);
    }
  }
  return set;
}

}  // namespace

HandlerTiming time_sample_handler(uint32_t calls, bool native_context) {
  HandlerTiming out;
  ThreadSlot* slot = own_slot();
  if (slot == nullptr || !slot->ring) return out;
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  info.si_code = SI_TIMER;
  info.si_value.sival_int = static_cast<int>(slot->cookie.load(std::memory_order_acquire));
  ucontext_t context;  // an interrupted PC of 0: a sample with no native frame to unwind
  std::memset(&context, 0, sizeof context);
  // This frame stays live while the handler runs: its registers are a real native stack.
  if (native_context) getcontext(&context);
  const pid_t tid = platform::current_tid();
  const uint32_t burst = static_cast<uint32_t>(slot->ring->capacity() / 2);
  const sigset_t ticks = sampling_signals();
  while (out.calls < calls) {
    if (!wait_until_drained(*slot)) break;
    for (uint32_t i = 0; i < burst && out.calls < calls; ++i) {
      sigset_t before;
      pthread_sigmask(SIG_BLOCK, &ticks, &before);  // outside the timed part
      const uint64_t t0 = thread_cpu_ns(tid);
      on_sample_signal(0, &info, &context);
      const uint64_t t1 = thread_cpu_ns(tid);
      const uint64_t t2 = thread_cpu_ns(tid);
      pthread_sigmask(SIG_SETMASK, &before, nullptr);
      out.handler_ns += t1 - t0;
      out.clock_ns += t2 - t1;
      ++out.calls;
    }
  }
  return out;
}

}  // namespace spyglass::cpython
