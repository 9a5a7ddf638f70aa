// The allocation and copy hooks. They run inside malloc, on any thread, at any time: they
// allocate nothing, take no lock and never enter the interpreter. Per thread they count
// bytes exactly and, as in the Scalene paper, take a threshold sample whenever the net
// change |allocated - freed| since the thread's last sample reaches the window; only then
// do they look at the thread's Python stack (through the capture callback).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../core/memory_record.hpp"
#include "../core/mpsc_ring.hpp"

namespace spyglass::shim {

inline constexpr uint64_t kDefaultWindowBytes = 1024 * 1024;

struct HookCallbacks {
  // Fills the calling thread's Python stack, innermost first; returns the depth.
  uint16_t (*capture)(uint32_t guard_index, pid_t tid, RawFrame* out, bool* truncated);
  // True when a malloc called from this address is the interpreter's (its object
  // allocator's large blocks, its own structures) rather than an extension's.
  bool (*is_interpreter_caller)(uintptr_t return_address);
};

struct HookOptions {
  uint64_t window_bytes = kDefaultWindowBytes;
  uint64_t copy_window_bytes = 2 * kDefaultWindowBytes;
};

// Exact, unsampled counts for one thread since the last start().
struct ThreadTotals {
  pid_t tid = 0;
  uint64_t alloc_bytes = 0;  // usable sizes of the blocks allocated
  uint64_t alloc_count = 0;
  uint64_t free_bytes = 0;  // usable sizes of the blocks freed (see block_set.hpp)
  uint64_t free_count = 0;
  uint64_t copy_bytes = 0;
};

// Patches every loaded object and starts counting. False when the hooks are in use.
bool start(const HookOptions& options, const HookCallbacks& callbacks);
// Stops counting and puts every patched entry back.
void stop();
bool active();
// Patches objects loaded since (call it periodically; cheap when nothing changed).
void patch_new_objects();

// Python's arena allocator has no malloc underneath to hook: its wrappers report here.
void note_arena_alloc(void* p, size_t size);
void note_arena_free(void* p, size_t size);

// Spyglass's own threads: their allocations are not the program's.
void ignore_this_thread();

// Spyglass's own work on a program thread (draining, building the profile).
class PauseThisThread {
 public:
  PauseThisThread();
  ~PauseThisThread();
  PauseThisThread(const PauseThisThread&) = delete;
  PauseThisThread& operator=(const PauseThisThread&) = delete;
};

MpscRing<MemoryRecord>& records();
// Bumped by every start(); records carry the one they were made in.
uint32_t epoch();
std::vector<ThreadTotals> totals();
const HookOptions& options();

// Fork handlers: the patcher's lock is held across fork; in the child, records half-written
// by threads that did not survive the fork are forgotten.
void before_fork();
void after_fork_parent();
void after_fork_child();

}  // namespace spyglass::shim
