#include "../forwarded_signals.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>

#include "../clock.hpp"
#include "../signals.hpp"

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
  if (!echo && signo > 0 && signo < kMaxSignal)
    call_wrapped(g_wrapped[signo], signo, info, context);
  errno = saved;
}

}  // namespace

void note_signal_forwarder(pid_t forwarder) {
  g_forwarder.store(forwarder, std::memory_order_relaxed);
}

bool drop_forwarded_echoes(int signo) {
  if (signo <= 0 || signo >= kMaxSignal || g_forwarder.load() == 0) return false;
  // Not for the default action, which ends the process at the first, nor an ignored one.
  return wrap_handler(signo, on_signal, &g_wrapped[signo]);
}

}  // namespace spyglass::platform
