#include "../termination.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>

#include "../clock.hpp"
#include "../signals.hpp"

namespace spyglass::platform {
namespace {

struct sigaction g_python {};      // the interpreter's handler, which ours calls
std::atomic<int> g_signo{0};       // the signal watched; 0 before watch_termination
std::atomic<uint64_t> g_since{0};  // when a signal Python has not seen yet came; 0: none
std::atomic<uint64_t> g_first{0};  // when the first of them came

void on_termination(int signo, siginfo_t* info, void* context) {
  const int saved = errno;
  const uint64_t now = monotonic_ns();
  uint64_t expected = 0;
  if (g_first.compare_exchange_strong(expected, now, std::memory_order_relaxed)) {
    g_since.store(now, std::memory_order_relaxed);
  }
  call_wrapped(g_python, signo, info, context);
  errno = saved;
}

// The main thread: the one whose id is the process's (the thread that forked, in a child).
void send_to_main_thread(int signo) { syscall(SYS_tgkill, getpid(), getpid(), signo); }

// A child starts with nothing pending: the interpreter clears its own flags after fork,
// and a signal the parent had not yet seen was not sent to the child.
void clear_in_child() {
  g_since.store(0, std::memory_order_relaxed);
  g_first.store(0, std::memory_order_relaxed);
}

}  // namespace

bool watch_termination(int signo) {
  g_first.store(0);
  g_since.store(0);
  // Already ours in a forked child, which inherits it with the interpreter's handler.
  if (!wrap_handler(signo, on_termination, &g_python)) return false;
  if (g_signo.exchange(signo) == 0) {
    static const bool registered = pthread_atfork(nullptr, nullptr, clear_in_child) == 0;
    (void)registered;
  }
  return true;
}

void termination_seen() {
  g_since.store(0, std::memory_order_relaxed);
  g_first.store(0, std::memory_order_relaxed);
}

void kick_lost_termination(uint64_t now_ns) {
  const int signo = g_signo.load(std::memory_order_relaxed);
  const uint64_t since = g_since.load(std::memory_order_relaxed);
  if (signo == 0 || since == 0 || now_ns - since < kKickAfterNs) return;
  const uint64_t first = g_first.load(std::memory_order_relaxed);
  if (first != 0 && now_ns - first >= kGiveUpNs) {
    // Python never took it (its main thread is in a long native call): end as the
    // default action would have.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(signo, &dfl, nullptr);
    // Once: a main thread that blocks the signal keeps it pending, as plain python would.
    g_signo.store(0, std::memory_order_relaxed);
    g_since.store(0, std::memory_order_relaxed);
    send_to_main_thread(signo);
    return;
  }
  g_since.store(now_ns, std::memory_order_relaxed);
  send_to_main_thread(signo);
}

}  // namespace spyglass::platform
