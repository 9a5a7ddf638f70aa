// The sampling signal handler. It runs on the sampled thread, in async-signal context: it
// takes no lock, allocates nothing, touches no reference count and calls no Python API
// beyond plain reads of thread-local interpreter state.
#define Py_BUILD_CORE 1
#include <Python.h>

#include <algorithm>
#include <cerrno>

#include "../core/thread_slots.hpp"
#include "../platform/clock.hpp"
#include "../platform/fault_guard.hpp"
#include "../platform/signals.hpp"
#include "../platform/threads.hpp"
#include "../shim/memory_hooks.hpp"
#include "call_sites.hpp"
#include "compat/interpreter.hpp"
#include "sampling_state.hpp"

namespace spyglass::cpython {

SamplingState& sampling_state() {
  static SamplingState state;
  return state;
}

uint16_t walk_stack(PyThreadState* ts, RawFrame* out, bool* truncated, Leaf* leaf) {
  *truncated = false;
  *leaf = Leaf{};
  constexpr int kInner = kMaxStackDepth - kOuterFrames;
  // Frames past the inner part go round a ring in out[kInner..], so that the outermost
  // kOuterFrames are there at the end, in a walk that stores nothing else.
  int depth = 0;
  // Bound the walk on frames visited too, not only recorded: shim frames hold no code.
  int visited = 0;
  for (compat::Frame* f = ts != nullptr ? compat::top_frame(ts) : nullptr; f != nullptr;
       f = compat::previous(f)) {
    const auto address = reinterpret_cast<uintptr_t>(f);
    if (address < 4096 || (address & (alignof(void*) - 1)) != 0 || ++visited > kMaxFramesWalked) {
      *truncated = true;
      break;
    }
    PyCodeObject* co = compat::code_of(f);
    if (co == nullptr) continue;
    const int offset = compat::instr_offset(f, co);
    if (depth == 0) *leaf = Leaf{f, co, offset, compat::opcode_at(f, co, offset)};
    RawFrame& slot = out[depth < kInner ? depth : kInner + (depth - kInner) % kOuterFrames];
    slot.code = reinterpret_cast<uintptr_t>(co);
    slot.instr_offset = offset;
    ++depth;
  }
  if (depth <= kMaxStackDepth) return static_cast<uint16_t>(depth);
  // Deeper: the frames left out lie between the two parts. The ring's oldest entry (the
  // innermost of the outer part) is where the next frame would have gone.
  *truncated = true;
  RawFrame* const ring = out + kInner;
  std::rotate(ring, ring + (depth - kInner) % kOuterFrames, ring + kOuterFrames);
  return static_cast<uint16_t>(kMaxStackDepth);
}

namespace {

// With another SIGSEGV handler first in line (faulthandler's, which pytest enables), a
// fault in the walk is reported as a crash before the guard can jump out. The one pointer
// that may be wild is the innermost frame's (compat::kTopFrameMayBeWild): it is checked
// first, its code read with checked reads, and the walk follows it only if it is a frame.
bool top_frame_checked(const SamplingState& state, PyThreadState* ts) {
  if (!compat::kTopFrameMayBeWild || ts == nullptr ||
      state.guard_first.load(std::memory_order_relaxed) ||
      !state.checked_reads.load(std::memory_order_relaxed)) {
    return true;
  }
  compat::Frame* f = compat::top_frame(ts);
  if (f == nullptr) return true;
  const pid_t self = state.self.load(std::memory_order_relaxed);
  PyObject* code = nullptr;
  PyTypeObject* type = nullptr;
  return platform::read_own_memory(self, compat::code_slot(f), &code, sizeof(code)) &&
         code != nullptr && platform::read_own_memory(self, &code->ob_type, &type, sizeof(type)) &&
         type == &PyCode_Type;
}

// What the innermost frame's call instruction is calling, read inside the fault guard.
// Only a thread holding the GIL can be in the machinery of a call into Python code; one
// without it is inside a C function that let the GIL go. The call frees its callee while
// the callee's slot still points to it (the timer often fires as the munmap of a large
// one returns): once another SIGSEGV handler is first in line (faulthandler's, which
// pytest enables), the guard cannot catch a fault in reading it, and the callee is read
// with checked reads. Which handler is first is asked here, not taken from guard_first,
// which is looked at every interval: an interval late after faulthandler.enable(). Timed
// at a call (time_sample_handler), the handler took 1.4 us with plain reads, 6.6 us with
// checked ones, and 2.0 us asking first.
Callee read_callee(const SamplingState& state, const Leaf& leaf) {
  if (!state.callee_tables || !at_call(state, leaf) || !PyGILState_Check()) {
    return Callee::kUnknown;
  }
  pid_t checked_by = 0;
  if (!platform::fault_handler_first()) {
    if (!state.checked_reads.load(std::memory_order_relaxed)) return Callee::kUnknown;
    checked_by = state.self.load(std::memory_order_relaxed);
  }
  return callee_at(leaf.frame, leaf.code, leaf.offset, checked_by);
}

// `shared` is set when the answer rests on who holds the GIL in code both sides use.
CpuClass classify(SamplingState& state, uint16_t depth, bool in_gc, const Leaf& leaf, Callee callee,
                  uintptr_t pc, bool* shared) {
  *shared = false;
  if (depth == 0) return CpuClass::kNative;  // no Python frame: a native thread
  // The collector is the interpreter's own work on the program's Python objects, charged
  // to the line whose allocation set it off.
  if (in_gc) return CpuClass::kPython;
  if (at_call(state, leaf)) {
    // The interpreter calling Python code is Python time; inside a builtin or an
    // extension called from this line is native.
    return callee == Callee::kPython ? CpuClass::kPython : CpuClass::kNative;
  }
  const platform::CodeRanges* ranges = state.ranges.load(std::memory_order_acquire);
  const platform::CodeRegion region =
      ranges != nullptr ? ranges->classify(pc) : platform::CodeRegion::kUnknown;
  switch (region) {
    case platform::CodeRegion::kInterpreter:
      return CpuClass::kPython;
    case platform::CodeRegion::kNative:
      return CpuClass::kNative;
    case platform::CodeRegion::kUnknown:
      state.unknown_pc_hits.fetch_add(1, std::memory_order_relaxed);
      [[fallthrough]];
    case platform::CodeRegion::kSystem:
      break;
  }
  // libc and friends serve both sides: the interpreter holds the GIL while it uses them,
  // extensions doing long work usually release it.
  if (PyGILState_Check()) return CpuClass::kPython;
  *shared = true;
  return CpuClass::kNative;
}

// Whether the first caller of shared code that is not itself shared code is the
// interpreter: a thread between two instructions, without the GIL, in pthread's condition
// wait, is the interpreter asking for the GIL back (take_gil), not a library at work. Two
// Python threads computing on a loaded machine showed 5 % of their line's CPU as native
// this way.
bool called_by_interpreter(const SamplingState& state, const uintptr_t* callers, uint8_t n) {
  const platform::CodeRanges* ranges = state.ranges.load(std::memory_order_acquire);
  if (ranges == nullptr) return false;
  for (uint8_t i = 0; i < n; ++i) {
    const platform::CodeRegion region = ranges->classify(callers[i]);
    if (region != platform::CodeRegion::kSystem) {
      return region == platform::CodeRegion::kInterpreter;
    }
  }
  return false;
}

// The native callers of a native sample's function, read from the stack under the fault
// guard: a frame whose rule misreads the stack faults or stops, and the chain keeps what it
// had. A return address in no known object prompts a rebuild of the tables (a dlopen).
uint8_t unwind_native(SamplingState& state, platform::FaultGuard& guard, pid_t tid,
                      const void* ucontext, uintptr_t pc, uintptr_t eval_bound, uintptr_t* out,
                      uintptr_t* stop) {
  *stop = 0;
  const platform::UnwindTables* tables = state.unwind.load(std::memory_order_acquire);
  if (tables == nullptr) return 0;
  uintptr_t sp = 0;
  uintptr_t fp = 0;
  platform::interrupted_sp_fp(ucontext, &sp, &fp);
  if (sp == 0) return 0;
  // Filled in place from zero, so what was found before a fault is kept.
  for (int i = 0; i < kMaxNativeCallers; ++i) out[i] = 0;
  size_t n = 0;
  bool lost = false;
  uintptr_t stopped_at = 0;
  platform::enter_guard(guard, tid);
  if (sigsetjmp(guard.env, 0) == 0) {
    n = tables->unwind(pc, sp, fp, out, kMaxNativeCallers, &lost, &stopped_at, eval_bound);
  } else {
    n = 0;
    while (n < kMaxNativeCallers && out[n] != 0) ++n;
    lost = false;  // a misread stack, not a library loaded since
  }
  platform::leave_guard(guard);
  if (lost) *stop = stopped_at;
  if (lost && stopped_at != 0) {
    const platform::CodeRanges* ranges = state.ranges.load(std::memory_order_acquire);
    if (ranges != nullptr && ranges->classify(stopped_at) == platform::CodeRegion::kUnknown) {
      state.unknown_pc_hits.fetch_add(1, std::memory_order_relaxed);
    }
  }
  return static_cast<uint8_t>(n);
}

// What the program set for the sampling signal (keep_sample_signal), in two slots so that a
// handler reading one is not torn by the next change: g_displaced_at says which is current.
struct sigaction g_displaced[2];
std::atomic<int> g_displaced_at{-1};

}  // namespace

bool keep_sample_signal(int signo) {
  const int next = g_displaced_at.load(std::memory_order_acquire) == 0 ? 1 : 0;
  if (!platform::reclaim_handler(signo, on_sample_signal, &g_displaced[next])) return false;
  g_displaced_at.store(next, std::memory_order_release);
  return true;
}

namespace {

void take_sample(uint32_t raw, void* ucontext);

}  // namespace

void on_sample_signal(int signo, siginfo_t* info, void* ucontext) {
  if (info == nullptr) return;
  const uint32_t raw = platform::timer_signal_cookie(info);
  if (platform::is_stale_timer_cookie(raw)) return;  // a clock closed since: no sample
  if (raw == 0) {
    // Sent, not a timer's: the program's own use of the signal, if it has one. (A timer of
    // its own on this signal cannot be told from a sampler's and is dropped.)
    const int at = g_displaced_at.load(std::memory_order_acquire);
    if (at >= 0) platform::call_wrapped(g_displaced[at], signo, info, ucontext);
    return;
  }
  // Not inside an allocation hook's own stack walk.
  if (!shim::walking_stack()) take_sample(raw, ucontext);
  platform::timer_signal_handled(info);
}

namespace {

void take_sample(uint32_t raw, void* ucontext) {
  const int saved_errno = errno;
  const uint32_t cookie = raw & ~kFirstTickFlag;
  ThreadSlot& slot = thread_slot_table()[cookie_index(cookie)];
  slot.busy.fetch_add(1, std::memory_order_acq_rel);
  if (cookie != 0 && slot.cookie.load(std::memory_order_acquire) == cookie) {
    SamplingState& state = sampling_state();
    const platform::CpuSplit now = platform::this_thread_cpu();
    if (SampleRecord* rec = reserve_cpu_sample(slot, now.user_ns, now.system_ns)) {
      Leaf leaf;
      Callee callee = Callee::kUnknown;
      rec->kind = SampleKind::kCpu;
      rec->tid = slot.tid;
      rec->wait_ns = 0;
      rec->t_ns = platform::monotonic_ns();  // a vDSO read, safe here
      // The walk may meet a frame being set up (see platform/fault_guard.hpp): a fault in it
      // abandons the stack instead of the process.
      platform::FaultGuard& guard = platform::fault_guard(cookie_index(cookie));
      PyThreadState* ts = PyGILState_GetThisThreadState();
      // Checked reads, before the guard: one not walked is taken as one that faulted.
      const bool walkable = top_frame_checked(state, ts);
      platform::enter_guard(guard, slot.tid);
      uintptr_t eval_bound = platform::kNoEvalLoop;
      if (walkable && sigsetjmp(guard.env, 0) == 0) {
        rec->depth = walk_stack(ts, rec->frames, &rec->truncated, &leaf);
        if (rec->depth > 0) {
          callee = read_callee(state, leaf);
          const uintptr_t local = compat::innermost_eval_local(ts);
          eval_bound = local != 0 ? local : platform::kEvalLoopUnknown;
        }
      } else {
        rec->depth = 0;
        rec->truncated = true;
        leaf = Leaf{};
        callee = Callee::kUnknown;
        eval_bound = ts != nullptr ? platform::kEvalLoopUnknown : platform::kNoEvalLoop;
      }
      platform::leave_guard(guard);
      // Which callee the call has is told later, when the table is (held_calls.hpp).
      for (uint64_t& word : rec->slot_callees) word = 0;
      if (callee == Callee::kNoTable) read_slot_callees(leaf.frame, leaf.code, rec->slot_callees);
      rec->in_gc = compat::gc_collecting(ts) && PyGILState_Check();
      rec->first_tick = (raw & kFirstTickFlag) != 0;
      // The first samples of a code on a call find no table: the drain has one built.
      rec->wants_call_sites = callee == Callee::kNoTable;
      rec->pc = platform::interrupted_pc(ucontext);
      bool shared = false;
      rec->cpu_class = classify(state, rec->depth, rec->in_gc, leaf, callee, rec->pc, &shared);
      rec->native_depth = 0;
      rec->native_stop = 0;
      if (rec->cpu_class == CpuClass::kNative) {
        rec->native_depth = unwind_native(state, guard, slot.tid, ucontext, rec->pc, eval_bound,
                                          rec->native_callers, &rec->native_stop);
        if (shared && called_by_interpreter(state, rec->native_callers, rec->native_depth)) {
          rec->cpu_class = CpuClass::kPython;
          rec->native_depth = 0;
          rec->native_stop = 0;
        }
      }
      slot.ring->commit();
      state.pending_records.fetch_add(1, std::memory_order_release);
    }
  }
  slot.busy.fetch_sub(1, std::memory_order_acq_rel);
  errno = saved_errno;
}

}  // namespace

}  // namespace spyglass::cpython
