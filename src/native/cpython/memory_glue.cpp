#define Py_BUILD_CORE 1
#include "memory_glue.hpp"

#include <Python.h>

#include <cstddef>

#include "../core/thread_slots.hpp"
#include "../platform/fault_guard.hpp"
#include "collector.hpp"
#include "compat/interpreter.hpp"
#include "sampling_state.hpp"

namespace spyglass::cpython {

namespace {

// The allocator hooks' fault guards come after the signal path's (core/limits.hpp).
constexpr uint32_t kMemoryGuardBase = kMaxThreadSlots;
static_assert(shim::kCounterSlots == kMaxThreads && kMaxThreadSlots == kMaxThreads);
static_assert(platform::kMaxFaultGuards >= kMemoryGuardBase + shim::kCounterSlots);

// The interpreter's own allocators of the object and memory domains, wrapped: what goes
// through them is the Python share of a line. Pymalloc stays underneath.
PyMemAllocatorEx g_original_object{};
PyMemAllocatorEx g_original_mem{};
bool g_wrapped = false;

uint16_t capture(uint32_t guard_index, pid_t tid, RawFrame* out, bool* truncated) {
  // Thread states are being torn down; a thread with none has no Python frame anyway.
  if (compat::is_finalizing()) return 0;
  PyThreadState* ts = PyGILState_GetThisThreadState();
  if (ts == nullptr) return 0;
  uint16_t depth = 0;
  Leaf leaf;
  platform::FaultGuard& guard =
      platform::fault_guard(kMemoryGuardBase + guard_index % shim::kCounterSlots);
  platform::enter_guard(guard, tid);
  if (sigsetjmp(guard.env, 0) == 0) {
    depth = walk_stack(ts, out, truncated, &leaf);
  } else {
    depth = 0;
    *truncated = true;
  }
  platform::leave_guard(guard);
  return depth;
}

bool is_interpreter_caller(uintptr_t return_address) {
  const platform::CodeRanges* ranges = sampling_state().ranges.load(std::memory_order_acquire);
  return ranges != nullptr &&
         ranges->classify(return_address) == platform::CodeRegion::kInterpreter;
}

void records_filling() {
  if (Collector* c = Collector::active()) c->wake_for_records();
}

static_assert(sizeof(shim::ForeignAllocator) == sizeof(PyMemAllocatorEx));
static_assert(offsetof(shim::ForeignAllocator, free) == offsetof(PyMemAllocatorEx, free));

void wrap(PyMemAllocatorDomain domain, PyMemAllocatorEx* original) {
  PyMem_GetAllocator(domain, original);
  PyMemAllocatorEx wrapped{original, &shim::python_malloc, &shim::python_calloc,
                           &shim::python_realloc, &shim::python_free};
  PyMem_SetAllocator(domain, &wrapped);
}

}  // namespace

bool start_memory_hooks(const shim::HookOptions& options) {
  platform::install_fault_handler();
  if (!shim::start(options,
                   shim::HookCallbacks{&capture, &is_interpreter_caller, &records_filling}))
    return false;
  if (!g_wrapped) {
    wrap(PYMEM_DOMAIN_OBJ, &g_original_object);
    wrap(PYMEM_DOMAIN_MEM, &g_original_mem);
    g_wrapped = true;
  }
  return true;
}

void stop_memory_hooks() {
  if (g_wrapped) {
    PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &g_original_object);
    PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &g_original_mem);
    g_wrapped = false;
  }
  shim::stop();
}

}  // namespace spyglass::cpython
