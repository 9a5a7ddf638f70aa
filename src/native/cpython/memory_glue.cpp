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

PyObjectArenaAllocator g_original_arena{};
bool g_arena_wrapped = false;

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

void* arena_alloc(void*, size_t size) {
  void* p = g_original_arena.alloc(g_original_arena.ctx, size);
  shim::note_arena_alloc(p, size);
  return p;
}

void arena_free(void*, void* p, size_t size) {
  shim::note_arena_free(p, size);
  g_original_arena.free(g_original_arena.ctx, p, size);
}

}  // namespace

bool start_memory_hooks(const shim::HookOptions& options) {
  platform::install_fault_handler();
  if (!shim::start(options, shim::HookCallbacks{&capture, &is_interpreter_caller})) return false;
  if (!g_arena_wrapped) {
    PyObject_GetArenaAllocator(&g_original_arena);
    PyObjectArenaAllocator wrapped{nullptr, &arena_alloc, &arena_free};
    PyObject_SetArenaAllocator(&wrapped);
    g_arena_wrapped = true;
  }
  return true;
}

void stop_memory_hooks() {
  if (g_arena_wrapped) {
    PyObject_SetArenaAllocator(&g_original_arena);
    g_arena_wrapped = false;
  }
  shim::stop();
}

}  // namespace spyglass::cpython
