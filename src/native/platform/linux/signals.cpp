#include "../signals.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <pthread.h>
#include <signal.h>
#include <ucontext.h>

namespace spyglass::platform {

bool die_with_parent() {
  const pid_t parent = getppid();
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return false;
  return getppid() == parent;  // it may have died before the request took effect
}

int install_sample_handler(SampleHandler handler) {
  // Start a few above SIGRTMIN: low real-time signals are the ones other runtimes grab first.
  for (int signo = SIGRTMIN + 4; signo <= SIGRTMAX - 4; ++signo) {
    struct sigaction old {};
    if (sigaction(signo, nullptr, &old) != 0) continue;
    const bool free_slot = !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL;
    if (!free_slot) continue;
    struct sigaction sa {};
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(signo, &sa, nullptr) == 0) return signo;
  }
  return -1;
}

AllSignalsBlocked::AllSignalsBlocked() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous_);
}

AllSignalsBlocked::~AllSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

uintptr_t interrupted_pc(const void* ucontext) {
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
#if defined(__x86_64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

bool wrap_handler(int signo, SampleHandler wrapper, struct sigaction* wrapped) {
  struct sigaction current {};
  if (sigaction(signo, nullptr, &current) != 0) return false;
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == wrapper) return true;
  if (!(current.sa_flags & SA_SIGINFO) &&
      (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)) {
    return false;
  }
  sigset_t block;
  sigset_t previous;
  sigemptyset(&block);
  sigaddset(&block, signo);
  pthread_sigmask(SIG_BLOCK, &block, &previous);
  *wrapped = current;
  struct sigaction ours = current;
  ours.sa_flags |= SA_SIGINFO;
  ours.sa_sigaction = wrapper;
  const bool done = sigaction(signo, &ours, nullptr) == 0;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return done;
}

bool reclaim_handler(int signo, SampleHandler ours, struct sigaction* displaced) {
  sigset_t block;
  sigset_t previous;
  sigemptyset(&block);
  sigaddset(&block, signo);
  pthread_sigmask(SIG_BLOCK, &block, &previous);
  struct sigaction current {};
  bool reclaimed = false;
  if (sigaction(signo, nullptr, &current) == 0 &&
      !((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == ours)) {
    *displaced = current;
    struct sigaction sa {};
    sa.sa_sigaction = ours;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    reclaimed = sigaction(signo, &sa, nullptr) == 0;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return reclaimed;
}

void call_wrapped(const struct sigaction& wrapped, int signo, siginfo_t* info, void* context) {
  if (wrapped.sa_flags & SA_SIGINFO) {
    wrapped.sa_sigaction(signo, info, context);
  } else if (wrapped.sa_handler != SIG_DFL && wrapped.sa_handler != SIG_IGN) {
    wrapped.sa_handler(signo);
  }
}

}  // namespace spyglass::platform
