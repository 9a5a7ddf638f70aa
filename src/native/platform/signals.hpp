// The sampling signal: chosen among the real-time signals nobody else handles, installed
// with SA_RESTART so interrupted system calls resume rather than fail.
#pragma once

#include <csignal>
#include <cstdint>

namespace spyglass::platform {

using SampleHandler = void (*)(int signo, siginfo_t* info, void* ucontext);

// Returns the signal number installed, or -1 when no free real-time signal exists.
int install_sample_handler(SampleHandler handler);

// Blocks every signal in the calling thread for its lifetime. Threads started meanwhile
// inherit the mask: spyglass's own threads must never be where a process-directed signal
// (SIGUSR1, SIGINT, ...) lands, or a program that blocks it to sigwait() would die of it.
class AllSignalsBlocked {
 public:
  AllSignalsBlocked();
  ~AllSignalsBlocked();
  AllSignalsBlocked(const AllSignalsBlocked&) = delete;
  AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;

 private:
  sigset_t previous_;
};

// In a freshly forked child: be sent SIGKILL when the parent dies, so that a program run
// by spyglass does not outlive spyglass being killed. False if the parent is gone already.
bool die_with_parent();

// Puts `wrapper` (with SA_SIGINFO, the rest of the flags and mask kept) in place of the
// handler set for `signo`, which is saved in `*wrapped` for call_wrapped(); the signal is
// blocked in this thread meanwhile, so a copy that comes in between finds one or the other.
// True when `wrapper` is in place (already, in a forked child); false when no handler is
// set (the default action, or ignored: nothing to wrap).
bool wrap_handler(int signo, SampleHandler wrapper, struct sigaction* wrapped);

// Puts `ours` (SA_SIGINFO, SA_RESTART) back as the handler of `signo` if another replaced
// it, saving that one, whatever it is (the default, ignored, a function), in `*displaced`;
// the signal is blocked in this thread meanwhile. False when it was ours already.
bool reclaim_handler(int signo, SampleHandler ours, struct sigaction* displaced);

// Calls a handler wrap_handler() saved, as the kernel would have.
void call_wrapped(const struct sigaction& wrapped, int signo, siginfo_t* info, void* context);

// The user-mode instruction pointer the signal interrupted.
uintptr_t interrupted_pc(const void* ucontext);

}  // namespace spyglass::platform
