// The allocation and copy hooks. They run inside malloc, on any thread, at any time: they
// allocate nothing, take no lock and never enter the interpreter. Per thread they count
// malloc-family bytes exactly, and sample allocations of every kind (malloc family,
// anonymous mmap, Python's allocator) by bytes, as tcmalloc, Go and heapprofd do: a
// countdown drawn from an exponential distribution with mean `window_bytes` (the sampling
// rate, which grows once a run has allocated a lot: see draw_countdown) is decremented by
// each allocation's size, and the allocation that takes it to zero is sampled. An allocation of s
// bytes is thus sampled with probability 1 - exp(-s/R), whatever else the program allocates, and
// stands for s / (1 - exp(-s/R)) bytes, which makes every sum of samples an unbiased estimate. Only
// a sampled allocation looks at the thread's Python stack (through the capture callback); it is
// then tracked until freed.
#pragma once

#include "byte_sampling.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../core/limits.hpp"
#include "../core/memory_record.hpp"
#include "../core/mpsc_ring.hpp"

namespace spyglass::shim {

// The mean bytes between samples at the start of a run and for copies (core/limits.hpp);
// past kTargetSamples samples the rate grows with the bytes allocated.
inline constexpr uint64_t kDefaultWindowBytes = kDefaultMemoryWindowBytes;
inline constexpr uint64_t kTargetSamples = 16384;
// The threads counted one by one; those past them share slot 0. A stack walk's fault
// guard is chosen by this slot.
inline constexpr uint32_t kCounterSlots = kMaxThreads;

struct HookCallbacks {
  // Fills the calling thread's Python stack, innermost first; returns the depth.
  // `guard_index`: below kCounterSlots, one thread's own while it walks.
  uint16_t (*capture)(uint32_t guard_index, pid_t tid, RawFrame* out, bool* truncated);
  // True when a malloc called from this address is the interpreter's (its object
  // allocator's large blocks, its own structures) rather than an extension's.
  bool (*is_interpreter_caller)(uintptr_t return_address);
  // Records are being made faster than the collector's tick drains them (a burst of large
  // allocations): called, on the allocating thread, each time another quarter of the
  // ring has been claimed, and when it is full. Must not block or allocate.
  void (*records_filling)();
};

struct HookOptions {
  uint64_t window_bytes = kDefaultWindowBytes;  // the sampling rate R
  uint64_t copy_window_bytes = kDefaultCopyWindowBytes;
  // Hook a CUDA library's copy entry points once one is loaded (cuda_copy_hooks.hpp).
  bool cuda_copies = true;
};

// The weight of a sampled allocation of `size` bytes at rate `rate` (0: the default): size
// over its chance of being sampled.
inline double sample_weight(uint64_t size, uint64_t rate) {
  return byte_sample_weight(size, rate != 0 ? rate : kDefaultWindowBytes);
}

// Exact, unsampled counts for one thread since the last start().
struct ThreadTotals {
  pid_t tid = 0;
  uint64_t alloc_bytes = 0;  // usable sizes of the blocks allocated
  uint64_t alloc_count = 0;
  uint64_t free_bytes = 0;  // usable sizes of the blocks freed (see block_set.hpp)
  uint64_t free_count = 0;
  uint64_t copy_bytes = 0;
};

// Our collector's thread had to wait for the GIL, which thread `tid` held: it was made to
// let it go, and then to wait for it back. Those one or two voluntary switches are
// spyglass's, not the program's, and its samples must not read them as the thread
// blocking of its own accord (see waited_since_last_sample in memory_hooks.cpp).
void note_forced_wait(pid_t tid);

// Patches every loaded object and starts counting. False when the hooks are in use.
bool start(const HookOptions& options, const HookCallbacks& callbacks);
// Stops counting and puts every patched entry back.
void stop();
bool active();
// Patches objects loaded since (call it periodically; cheap when nothing changed).
void patch_new_objects();
// A copy through a CUDA library (the CUDA hooks call it after the copy was made): charged
// to the calling thread's line as the memcpy family's copies are, by direction.
void record_cuda_copy(uint64_t bytes, CopyKind kind);

// The layout of CPython's PyMemAllocatorEx (a stable public struct), so that the wrappers
// of Python's allocator live here, next to the counters they share a thread-local with.
struct ForeignAllocator {
  void* ctx;
  void* (*malloc)(void* ctx, size_t size);
  void* (*calloc)(void* ctx, size_t count, size_t size);
  void* (*realloc)(void* ctx, void* p, size_t size);
  void (*free)(void* ctx, void* p);
};

// Wrappers of one domain of Python's allocator: `ctx` is a ForeignAllocator holding the
// domain's original. What goes through them is the Python share.
void* python_malloc(void* ctx, size_t n);
void* python_calloc(void* ctx, size_t count, size_t size);
void* python_realloc(void* ctx, void* old, size_t n);
void python_free(void* ctx, void* p);

// Spyglass's own threads: their allocations are not the program's.
void ignore_this_thread();

// True while this thread's allocation hook walks its stack for a sample. The CPU sampler's
// handler, which walks stacks under the same fault-guard scheme, must not nest inside that
// walk: it skips its sample instead (the CPU carries over to the thread's next one). A
// flag read in the handler costs nothing, where blocking signals around each walk cost two
// system calls per memory sample.
extern constinit thread_local bool t_walking_stack __attribute__((tls_model("initial-exec")));
inline bool walking_stack() { return t_walking_stack; }

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
