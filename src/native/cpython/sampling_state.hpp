// State read by the signal handler: set up before timers are armed, then only read
// (atomically) on the signal path.
#pragma once

#include <Python.h>
#include <signal.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "../core/sample.hpp"
#include "../platform/code_ranges.hpp"
#include "../platform/unwind_tables.hpp"

namespace spyglass::cpython {

struct SamplingState {
  // Opcodes that call out of the interpreter (CALL and its specialised forms), by value as
  // stored in the code: a sample whose innermost frame is on one is inside a C call.
  std::array<bool, 256> call_opcode{};
  bool callee_tables = false;  // call_sites.hpp is set up: callees can be read
  std::atomic<const platform::CodeRanges*> ranges{nullptr};
  std::atomic<const platform::UnwindTables*> unwind{nullptr};
  std::atomic<uint64_t> unknown_pc_hits{0};  // prompts a rebuild of `ranges` after dlopen
  std::atomic<uint64_t> pending_records{0};  // written but not yet drained, all threads
  // Whether a fault in the handler's walk reaches the fault guard first (checked every
  // tick); if not, the one pointer that may be wild is checked before the walk follows it.
  std::atomic<bool> guard_first{true};
  std::atomic<pid_t> self{0};  // this process, for platform::read_own_memory
  // Whether checked reads work here (a seccomp filter may refuse them): if not, the walk
  // goes on unchecked, under the guard alone.
  std::atomic<bool> checked_reads{false};
};

SamplingState& sampling_state();

// The signal handler for the sampling signal.
void on_sample_signal(int signo, siginfo_t* info, void* ucontext);
// The program set a handler of its own for the sampling signal (signal.signal, asked by
// its Python side after each call): the sampling handler goes back in place, and the
// program's is called for every copy of the signal that is not a sample's (one it sends
// itself, a timer of its own). False when the handler was still the sampler's.
bool keep_sample_signal(int signo);

// Where the innermost Python frame stands.
struct Leaf {
  void* frame = nullptr;  // a compat::Frame
  PyCodeObject* code = nullptr;
  int offset = -1;
  int opcode = -1;  // as stored in the running code (possibly specialised), or -1
};

// Whether the innermost frame stands on a call instruction: inside a C function it called
// (or the interpreter's machinery for calling Python code).
inline bool at_call(const SamplingState& state, const Leaf& leaf) {
  return leaf.opcode >= 0 && state.call_opcode[static_cast<size_t>(leaf.opcode)];
}

// Fills `out` with the thread's Python stack, innermost first. Call it on the thread itself
// or with the GIL held. Returns the depth; `leaf` gets the innermost frame's position.
uint16_t walk_stack(PyThreadState* ts, RawFrame* out, bool* truncated, Leaf* leaf);

}  // namespace spyglass::cpython
