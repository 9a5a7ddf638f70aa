// The sampling signal: chosen among the real-time signals nobody else handles, installed
// with SA_RESTART so interrupted system calls resume rather than fail.
#pragma once

#include <csignal>
#include <cstdint>

namespace spyglass::platform {

using SampleHandler = void (*)(int signo, siginfo_t* info, void* ucontext);

// Returns the signal number installed, or -1 when no free real-time signal exists.
int install_sample_handler(SampleHandler handler);

// The user-mode instruction pointer the signal interrupted.
uintptr_t interrupted_pc(const void* ucontext);

}  // namespace spyglass::platform
