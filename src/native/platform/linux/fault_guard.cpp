#include "../fault_guard.hpp"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

namespace spyglass::platform {

namespace {

constinit FaultGuard g_guards[kMaxFaultGuards];
std::atomic<int> g_active{0};  // guarded regions in progress, all threads
struct sigaction g_previous_segv {};
struct sigaction g_previous_bus {};

void pass_on(int signo, siginfo_t* info, void* ucontext) {
  const struct sigaction& prev = signo == SIGSEGV ? g_previous_segv : g_previous_bus;
  if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr) {
    prev.sa_sigaction(signo, info, ucontext);
    return;
  }
  const bool sent = info == nullptr || info->si_code <= 0;
  if (prev.sa_handler == SIG_IGN && sent) return;  // the program ignores it: so do we
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler != nullptr) {
    prev.sa_handler(signo);
    return;
  }
  signal(signo, SIG_DFL);
  // Default action. For a real fault, returning re-runs the faulting instruction, which
  // now kills the process (with a core dump) as if we had never been here. A signal that
  // was sent (kill, raise, pthread_kill) re-runs nothing: it must be sent again, or the
  // program would go on as if it had never been told to die.
  if (sent) raise(signo);
}

void on_fault(int signo, siginfo_t* info, void* ucontext) {
  // Only a fault (si_code > 0) can come from a guarded read; a sent signal is the
  // program's business.
  const bool fault = info != nullptr && info->si_code > 0;
  if (fault && g_active.load(std::memory_order_acquire) > 0) {
    const auto tid = static_cast<pid_t>(syscall(SYS_gettid));
    for (FaultGuard& g : g_guards) {
      if (g.tid.load(std::memory_order_relaxed) == tid) siglongjmp(g.env, 1);
    }
  }
  pass_on(signo, info, ucontext);
}

bool install_one(int signo, struct sigaction* previous) {
  struct sigaction current {};
  if (sigaction(signo, nullptr, &current) != 0) return false;
  if ((current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == on_fault) return true;
  struct sigaction sa {};
  sa.sa_sigaction = on_fault;
  // SA_NODEFER: after jumping out of the handler the signal must not stay blocked.
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(signo, &sa, previous) != 0) return false;
  return true;
}

}  // namespace

bool install_fault_handler() {
  // Once per process: a handler installed after ours (faulthandler, say) saved ours as its
  // predecessor, and taking the first place back would make the two call each other.
  static const bool installed =
      install_one(SIGSEGV, &g_previous_segv) && install_one(SIGBUS, &g_previous_bus);
  return installed;
}

bool fault_handler_first() {
  for (int signo : {SIGSEGV, SIGBUS}) {
    struct sigaction current {};
    if (sigaction(signo, nullptr, &current) != 0) return false;
    if ((current.sa_flags & SA_SIGINFO) == 0 || current.sa_sigaction != on_fault) return false;
  }
  return true;
}

void unblock_fault_signals() {
  sigset_t faults;
  sigemptyset(&faults);
  sigaddset(&faults, SIGSEGV);
  sigaddset(&faults, SIGBUS);
  pthread_sigmask(SIG_UNBLOCK, &faults, nullptr);
}

FaultGuard& fault_guard(uint32_t index) { return g_guards[index % kMaxFaultGuards]; }

void enter_guard(FaultGuard& g, pid_t tid) {
  g.tid.store(tid, std::memory_order_relaxed);
  g_active.fetch_add(1, std::memory_order_acq_rel);
}

void leave_guard(FaultGuard& g) {
  g_active.fetch_sub(1, std::memory_order_acq_rel);
  g.tid.store(0, std::memory_order_relaxed);
}

bool read_own_memory(pid_t self, const void* address, void* out, size_t size) {
  iovec local{out, size};
  iovec remote{const_cast<void*>(address), size};
  return process_vm_readv(self, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

}  // namespace spyglass::platform
