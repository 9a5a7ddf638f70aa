#include "../forwarded_signals.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>

#include "../clock.hpp"

namespace spyglass::platform {
namespace {

constexpr int kMaxSignal = 65;

std::atomic<pid_t> g_forwarder{0};
struct sigaction g_wrapped[kMaxSignal] {};  // the handler each wrapper calls
// When the last copy of each signal came from another process, and when the last one
// the forwarder passed on was delivered, if no direct copy has matched it yet; 0: none.
std::atomic<uint64_t> g_forwarded_at[kMaxSignal];
std::atomic<uint64_t> g_direct_at[kMaxSignal];

bool within(const std::atomic<uint64_t>& then, uint64_t now) {
  const uint64_t at = then.load(std::memory_order_relaxed);
  return at != 0 && now - at < kEchoWindowNs;
}

void on_signal(int signo, siginfo_t* info, void* context) {
  const int saved = errno;
  const uint64_t now = monotonic_ns();
  const pid_t forwarder = g_forwarder.load(std::memory_order_relaxed);
  // Sent with kill() by the supervisor, or by another process: a group's signal reaches
  // the program as the latter. The terminal's (SI_KERNEL) the supervisor does not pass
  // on, and the program's own (raise_signal, after a shutdown puts the default handler
  // back) is never an echo: neither is matched.
  const bool user = info != nullptr && info->si_code == SI_USER && info->si_pid != getpid();
  const bool forwarded = user && forwarder != 0 && info->si_pid == forwarder;
  bool echo = false;
  if (signo > 0 && signo < kMaxSignal && user) {
    std::atomic<uint64_t>& direct_at = g_direct_at[signo];
    std::atomic<uint64_t>& forwarded_at = g_forwarded_at[signo];
    if (forwarded) {
      // The direct copy stays noted: `timeout -s INT` signals spyglass, then the group,
      // and spyglass may pass on both.
      echo = within(direct_at, now);
      if (!echo) forwarded_at.store(now, std::memory_order_relaxed);
    } else {
      echo = within(forwarded_at, now);
      if (echo) forwarded_at.store(0, std::memory_order_relaxed);  // matched once
      direct_at.store(now, std::memory_order_relaxed);
    }
  }
  if (!echo && signo > 0 && signo < kMaxSignal) {
    const struct sigaction& next = g_wrapped[signo];
    if (next.sa_flags & SA_SIGINFO) {
      next.sa_sigaction(signo, info, context);
    } else if (next.sa_handler != SIG_DFL && next.sa_handler != SIG_IGN) {
      next.sa_handler(signo);
    }
  }
  errno = saved;
}

}  // namespace

void note_signal_forwarder(pid_t forwarder) {
  g_forwarder.store(forwarder, std::memory_order_relaxed);
}

bool drop_forwarded_echoes(int signo) {
  if (signo <= 0 || signo >= kMaxSignal || g_forwarder.load() == 0) return false;
  struct sigaction current {};
  if (sigaction(signo, nullptr, &current) != 0) return false;
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_signal) return true;
  if (!(current.sa_flags & SA_SIGINFO) &&
      (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)) {
    return false;  // the default ends the process at the first; an ignored one is nothing
  }
  // Blocked while the wrapper changes: a copy coming in between finds one or the other.
  sigset_t block;
  sigset_t previous;
  sigemptyset(&block);
  sigaddset(&block, signo);
  pthread_sigmask(SIG_BLOCK, &block, &previous);
  g_wrapped[signo] = current;
  struct sigaction ours = current;
  ours.sa_flags |= SA_SIGINFO;
  ours.sa_sigaction = on_signal;
  const bool done = sigaction(signo, &ours, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return done;
}

}  // namespace spyglass::platform
