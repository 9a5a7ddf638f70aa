#define Py_BUILD_CORE 1
#include "memory_glue.hpp"

#include <Python.h>

#include "../platform/fault_guard.hpp"
#include "compat/interpreter.hpp"
#include "sampling_state.hpp"

namespace spyglass::cpython {

namespace {

// Fault guards above the CPU sampler's range: a thread may hold one of each in turn.
constexpr uint32_t kMemoryGuardBase = 4096;

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
  int leaf_opcode = -1;
  platform::FaultGuard& guard = platform::fault_guard(kMemoryGuardBase + guard_index % 4096);
  platform::enter_guard(guard, tid);
  if (sigsetjmp(guard.env, 0) == 0) {
    depth = walk_stack(ts, out, truncated, &leaf_opcode);
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

// ctx is the wrapped domain's original allocator. Its own mallocs and arena mmaps run
// paused: the block it returns is counted once, here, as Python's.
void* py_malloc(void* ctx, size_t n) {
  const auto* orig = static_cast<PyMemAllocatorEx*>(ctx);
  void* p = nullptr;
  {
    const shim::PauseThisThread paused;
    p = orig->malloc(orig->ctx, n);
  }
  shim::note_python_alloc(p, n);
  return p;
}

void* py_calloc(void* ctx, size_t count, size_t size) {
  const auto* orig = static_cast<PyMemAllocatorEx*>(ctx);
  void* p = nullptr;
  {
    const shim::PauseThisThread paused;
    p = orig->calloc(orig->ctx, count, size);
  }
  shim::note_python_alloc(p, count * size);
  return p;
}

void* py_realloc(void* ctx, void* old, size_t n) {
  const auto* orig = static_cast<PyMemAllocatorEx*>(ctx);
  shim::note_python_free(old);  // before: once freed, its address may be reused
  void* p = nullptr;
  {
    const shim::PauseThisThread paused;
    p = orig->realloc(orig->ctx, old, n);
  }
  // A failed realloc keeps the old block, now unsampled: its free is simply not news.
  shim::note_python_alloc(p, n);
  return p;
}

void py_free(void* ctx, void* p) {
  const auto* orig = static_cast<PyMemAllocatorEx*>(ctx);
  shim::note_python_free(p);
  const shim::PauseThisThread paused;
  orig->free(orig->ctx, p);
}

void wrap(PyMemAllocatorDomain domain, PyMemAllocatorEx* original) {
  PyMem_GetAllocator(domain, original);
  PyMemAllocatorEx wrapped{original, &py_malloc, &py_calloc, &py_realloc, &py_free};
  PyMem_SetAllocator(domain, &wrapped);
}

}  // namespace

bool start_memory_hooks(const shim::HookOptions& options) {
  platform::install_fault_handler();
  if (!shim::start(options, shim::HookCallbacks{&capture, &is_interpreter_caller})) return false;
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
