// The wait engine's reading of what a blocked thread's call tells of a library it waits
// on: the package of the C function its innermost frame is calling, and the note that
// lends the library's pool threads' CPU to the waiting line (library_waits.hpp).
#define Py_BUILD_CORE 1
#include <Python.h>

#include <csetjmp>
#include <vector>

#include "../platform/clock.hpp"
#include "../platform/fault_guard.hpp"
#include "call_sites.hpp"
#include "collection.hpp"
#include "sampling_state.hpp"
#include "wait_engine.hpp"

namespace spyglass::cpython {

// With the GIL, a thread's frames hold still, but not the objects above its value stack's
// top: a thread that gave the GIL up at the check after a call still stands on the call,
// whose callee it has freed (3.11 and 3.12 leave CALL_FUNCTION_EX's there). Read inside the
// guard, as without the GIL.
uint64_t WaitEngine::guarded_library_package(const Leaf& leaf, PyCodeObject** no_table) const {
  static_assert(kWaitGuard < platform::kMaxFaultGuards);
  platform::FaultGuard& guard = platform::fault_guard(kWaitGuard);
  platform::enter_guard(guard, platform::current_tid());
  volatile uint64_t package = 0;  // set after sigsetjmp, read after a possible jump back
  package_unsettled_ = true;      // unless read to the end
  if (sigsetjmp(guard.env, 0) == 0) package = library_package(leaf, no_table);
  platform::leave_guard(guard);
  return package;
}

uint64_t WaitEngine::library_package(const Leaf& leaf, PyCodeObject** no_table) const {
  SamplingState& state = sampling_state();
  package_unsettled_ = false;
  if (!state.callee_tables || leaf.code == nullptr || !at_call(state, leaf)) return 0;
  // Plain reads of the callee while the guard's handler is first in line (checked reads
  // cost microseconds, for every blocked thread every interval); checked ones after
  // another's, or none where the kernel refuses them.
  pid_t checked_by = 0;
  if (!platform::fault_handler_first()) {
    if (!state.checked_reads.load(std::memory_order_relaxed)) {
      package_unsettled_ = true;
      return 0;
    }
    checked_by = state.self.load(std::memory_order_relaxed);
  }
  // The copy, not the code's own table: without the GIL, its extra slot may be moved.
  const std::vector<int>* table = ctx().collection.call_site_copy(leaf.code);
  if (table == nullptr) {
    *no_table = leaf.code;
    package_unsettled_ = true;
    return 0;
  }
  const uintptr_t entry =
      native_entry(callable_in_table(leaf.frame, leaf.code, leaf.offset, *table), checked_by);
  const platform::CodeRanges* ranges = state.ranges.load(std::memory_order_acquire);
  if (entry == 0) return 0;
  if (ranges == nullptr) {
    package_unsettled_ = true;
    return 0;
  }
  // A call into an object loaded since the ranges were built: the CPU engine's upkeep
  // rebuilds them at its next tick, as for a sample met there, and the next note knows.
  if (ranges->classify(entry) == platform::CodeRegion::kUnknown) {
    state.unknown_pc_hits.fetch_add(1, std::memory_order_relaxed);
    package_unsettled_ = true;
  }
  return ranges->library_package(entry);
}

void WaitEngine::note_library_wait(pid_t tid, size_t stack, uint64_t cpu_ns, uint64_t waited_ns) {
  LibraryWaits& waits = ctx().collection.library_waits();
  // Only a thread on a line of the program lends one: a library's own thread blocked in
  // its package's code waits for work, not on the library.
  const Collection::ProgramCall call = stack != Collection::kNotAdded
                                           ? ctx().collection.program_call(scratch_)
                                           : Collection::ProgramCall{};
  // Blocked in no library's native code, it may wait inside a library's Python code (on a
  // lock, a future, a queue) for the library's own Python threads.
  if (blocked_package_ == 0) blocked_package_ = call.package;
  const uint64_t now = platform::monotonic_ns();
  if (blocked_package_ != 0 && call.line != kNoLineKey) {
    // Its wait not yet charged was spent there, as far as anything tells.
    const uint64_t since = now > waited_ns ? now - waited_ns : 0;
    waits.note(tid, stack, blocked_package_, call.line, since, now, cpu_ns);
  } else {
    waits.forget(tid, now);
  }
}

}  // namespace spyglass::cpython
