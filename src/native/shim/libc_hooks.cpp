// The C library's allocation, mapping, loading and copy functions, replaced in every
// loaded object's offset table (platform/got_patcher.hpp) while the hooks run: each
// replacement calls the real function and tells the hooks' state (hook_state.hpp).
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>

#include <cstdarg>
#include <cstdlib>
#include <cstring>

#include "cuda_copy_hooks.hpp"
#include "hook_state.hpp"
#include "reserved_maps.hpp"

namespace spyglass::shim::hooks {

namespace {

void on_malloc(void* p, size_t requested, uintptr_t caller) {
  if (p == nullptr) return;
  ThreadState* t = counting_thread();
  if (t == nullptr) return;
  const size_t usable = malloc_usable_size(p);
  const auto block = reinterpret_cast<uintptr_t>(p);
  // The exact counters (usable sizes, every call); a large block they cannot remember is
  // left out of them, so that its free is not subtracted either.
  if (usable < kTrackedBlockBytes || g_blocks.insert(block)) {
    Counters& c = g_counters[t->slot];
    bump(c.alloc_bytes, usable, t->slot == 0);
    bump(c.alloc_count, 1, t->slot == 0);
  }
  const bool python =
      g_callbacks.is_interpreter_caller != nullptr && g_callbacks.is_interpreter_caller(caller);
  // Sampled by the size asked for, as memray and tracemalloc count.
  sample_alloc(*t, block, requested, python);
}

// A large block the hooks never saw allocated (made before start) is not ours to count.
void on_free(void* p) {
  if (p == nullptr) return;
  ThreadState* t = counting_thread();
  if (t == nullptr) return;
  const auto block = reinterpret_cast<uintptr_t>(p);
  const size_t size = malloc_usable_size(p);
  if (size < kTrackedBlockBytes || g_blocks.erase(block)) {
    Counters& c = g_counters[t->slot];
    bump(c.free_bytes, size, t->slot == 0);
    bump(c.free_count, 1, t->slot == 0);
  }
  sample_free(*t, block);
}

#define SPYGLASS_CALLER reinterpret_cast<uintptr_t>(__builtin_return_address(0))

// The replacements. Each calls the real function through this object's own (unpatched)
// table, so an allocator preloaded by the program is still the one that serves it.
void* hook_malloc(size_t n) {
  void* p = malloc(n);
  on_malloc(p, n, SPYGLASS_CALLER);
  return p;
}
void* hook_calloc(size_t n, size_t m) {
  void* p = calloc(n, m);
  on_malloc(p, n * m, SPYGLASS_CALLER);
  return p;
}
void hook_free(void* p) {
  on_free(p);
  free(p);
}
void* hook_realloc(void* p, size_t n) {
  // The old block is accounted as freed before the call: once realloc returns, another
  // thread may already have been given its address.
  const size_t old = p != nullptr ? malloc_usable_size(p) : 0;
  on_free(p);
  void* q = realloc(p, n);
  if (q != nullptr) {
    on_malloc(q, n, SPYGLASS_CALLER);
  } else if (p != nullptr && n != 0) {
    on_malloc(p, old, SPYGLASS_CALLER);  // failed: the old block is still there
  }
  return q;
}
int hook_posix_memalign(void** out, size_t alignment, size_t n) {
  const int rc = posix_memalign(out, alignment, n);
  if (rc == 0) on_malloc(*out, n, SPYGLASS_CALLER);
  return rc;
}
void* hook_aligned_alloc(size_t alignment, size_t n) {
  void* p = aligned_alloc(alignment, n);
  on_malloc(p, n, SPYGLASS_CALLER);
  return p;
}
void* hook_memalign(size_t alignment, size_t n) {
  void* p = memalign(alignment, n);
  on_malloc(p, n, SPYGLASS_CALLER);
  return p;
}
void* hook_valloc(size_t n) {
  void* p = valloc(n);
  on_malloc(p, n, SPYGLASS_CALLER);
  return p;
}
void* hook_pvalloc(size_t n) {
  void* p = pvalloc(n);
  on_malloc(p, n, SPYGLASS_CALLER);
  return p;
}

// Anonymous mappings are allocations (native); file mappings are not. Only calls through
// an object's offset table arrive here: the C allocator's own mmaps for large blocks are
// calls inside the C library, which never go through a table, so nothing is counted twice.
// An allocator's reservation is counted as it becomes resident (reserved_maps.hpp).
void on_map(void* p, size_t length, int prot, int flags) {
  if (p == MAP_FAILED || (flags & MAP_ANONYMOUS) == 0) return;
  const auto block = reinterpret_cast<uintptr_t>(p);
  if ((flags & MAP_FIXED) != 0) {
    // Over a reservation (an allocator committing or decommitting part of it): its pages
    // are the reservation's, measured with it. Over part of one: that part is replaced.
    if (inside_reserved(block, length)) return;
    unmap_reserved(block, length);
  }
  if (ThreadState* t = counting_thread()) {
    if (is_reservation(length, prot, flags)) {
      note_reserved(*t, block, length);
    } else {
      sample_alloc(*t, block, length, /*python=*/false);
    }
  }
}
void on_unmap(void* p, size_t length) {
  if (p == nullptr || p == MAP_FAILED) return;
  // Whichever thread unmaps it (one that does not count, too), a reservation is gone.
  unmap_reserved(reinterpret_cast<uintptr_t>(p), length);
  if (ThreadState* t = counting_thread()) sample_free(*t, reinterpret_cast<uintptr_t>(p));
}
void* hook_mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  void* p = mmap(addr, length, prot, flags, fd, offset);
  on_map(p, length, prot, flags);
  return p;
}
int hook_munmap(void* addr, size_t length) {
  // A partial unmap of a sampled mapping ends all of it: mappings are seldom trimmed.
  on_unmap(addr, length);
  return munmap(addr, length);
}
void* hook_mremap(void* old, size_t old_length, size_t length, int flags, ...) {
  void* wanted = nullptr;
  if ((flags & MREMAP_FIXED) != 0) {
    va_list args;
    va_start(args, flags);
    wanted = va_arg(args, void*);
    va_end(args);
  }
  // As realloc: the old mapping is freed, the new one allocated. Only a mapping the hooks
  // sampled is known to be anonymous; another one's new size is left out (a reservation's
  // too: it is no longer listed).
  bool sampled = false;
  unmap_reserved(reinterpret_cast<uintptr_t>(old), old_length);
  if (ThreadState* t = counting_thread())
    sampled = sample_free(*t, reinterpret_cast<uintptr_t>(old));
  void* p = mremap(old, old_length, length, flags, wanted);
  if (p != MAP_FAILED && sampled) on_map(p, length, PROT_READ | PROT_WRITE, MAP_ANONYMOUS);
  return p;
}

// Objects loaded while the hooks run are patched before dlopen returns, so their first
// allocation after it is seen.
void after_dlopen() {
  if (!g_enabled.load(std::memory_order_acquire) || g_patcher == nullptr) return;
  enter_own_work(t_state);
  g_patcher->patch_new_objects();
  if (g_options.cuda_copies) cuda::refresh();
  leave_own_work(t_state);
}
void* hook_dlopen(const char* file, int mode) {
  void* handle = platform::dlopen_for(SPYGLASS_CALLER, file, mode);
  if (handle != nullptr) after_dlopen();
  return handle;
}
void* hook_dlmopen(Lmid_t namespace_id, const char* file, int mode) {
  void* handle = dlmopen(namespace_id, file, mode);
  if (handle != nullptr) after_dlopen();
  return handle;
}

// A wait of the interpreter's on a condition variable is its thread waiting for the GIL
// (3.9 to 3.13 take it, and hand it over, with these two): timed, so that the memory
// samples can tell a thread that blocked from one that only took turns with others for
// the GIL (waited_since_last_sample).
bool interpreter_waits(uintptr_t caller) {
  return g_callbacks.is_interpreter_caller != nullptr && g_callbacks.is_interpreter_caller(caller);
}
int hook_cond_wait(pthread_cond_t* cond, pthread_mutex_t* mutex) {
  if (!interpreter_waits(SPYGLASS_CALLER)) return pthread_cond_wait(cond, mutex);
  const uint64_t start = platform::monotonic_ns();
  const int done = pthread_cond_wait(cond, mutex);
  t_state.gil_wait_ns += platform::monotonic_ns() - start;
  return done;
}
int hook_cond_timedwait(pthread_cond_t* cond, pthread_mutex_t* mutex, const timespec* until) {
  if (!interpreter_waits(SPYGLASS_CALLER)) return pthread_cond_timedwait(cond, mutex, until);
  const uint64_t start = platform::monotonic_ns();
  const int done = pthread_cond_timedwait(cond, mutex, until);
  t_state.gil_wait_ns += platform::monotonic_ns() - start;
  return done;
}

// Counts `n` copied bytes against the thread's window: true when the window has ended
// (the bytes of its whole window and what this copy took past it are then counted).
bool copy_window_ends(ThreadState& t, size_t n) {
  const auto size = static_cast<int64_t>(n);
  if (t.slot == 0) {  // threads past the table share its counters
    bump(g_counters[0].copy_bytes, n, /*shared=*/true);
    t.copy_countdown -= size;
    return t.copy_countdown <= 0;
  }
  Counters& c = g_counters[t.slot];
  const int64_t left = c.copy_left.load(std::memory_order_relaxed) - size;
  if (left > 0) {  // its first copy since start(): the fast path had not seen it counting
    c.copy_left.store(left, std::memory_order_relaxed);
    return false;
  }
  bump(c.copy_bytes, c.copy_window.load(std::memory_order_relaxed) + static_cast<uint64_t>(-left),
       /*shared=*/false);
  c.copy_window.store(0, std::memory_order_relaxed);
  c.copy_left.store(0, std::memory_order_relaxed);
  return true;
}

void on_copy(size_t n) {
  ThreadState* t = counting_thread();
  if (t == nullptr || !copy_window_ends(*t, n)) return;
  const double weight = byte_sample_weight(n, t->copy_rate);  // drawn at start_counting
  emit_copy(*t, static_cast<uint64_t>(weight + 0.5), CopyKind::kHost);
  start_copy_window(*t);
}

// The common copy: a counting thread with a slot of its own, inside its window. Both ways
// out of the hooks below are tail calls, so that this path saves no register: the copies
// are the most frequent hooked calls, many of a few bytes. It only counts the window down:
// the bytes copied are the windows' sizes, added as each ends (on_copy).
[[gnu::always_inline]] inline bool count_copy_quickly(size_t n) {
  ThreadState& t = t_state;
  if (t.gate != g_gate.load(std::memory_order_acquire) || t.slot == 0) return false;
  std::atomic<int64_t>& countdown = g_counters[t.slot].copy_left;
  const int64_t left = countdown.load(std::memory_order_relaxed) - static_cast<int64_t>(n);
  if (left <= 0) return false;
  countdown.store(left, std::memory_order_relaxed);
  return true;
}
[[gnu::noinline]] void* memcpy_counted(void* dst, const void* src, size_t n) {
  on_copy(n);
  return memcpy(dst, src, n);
}
[[gnu::noinline]] void* memmove_counted(void* dst, const void* src, size_t n) {
  on_copy(n);
  return memmove(dst, src, n);
}
void* hook_memcpy(void* dst, const void* src, size_t n) {
  if (count_copy_quickly(n)) return memcpy(dst, src, n);
  return memcpy_counted(dst, src, n);
}
void* hook_memmove(void* dst, const void* src, size_t n) {
  if (count_copy_quickly(n)) return memmove(dst, src, n);
  return memmove_counted(dst, src, n);
}

}  // namespace

platform::GotPatcher& patcher() {
  static platform::GotPatcher* const made = g_patcher = new platform::GotPatcher(
      {
          {"malloc", reinterpret_cast<void*>(&hook_malloc), reinterpret_cast<void*>(&::malloc)},
          {"calloc", reinterpret_cast<void*>(&hook_calloc), reinterpret_cast<void*>(&::calloc)},
          {"realloc", reinterpret_cast<void*>(&hook_realloc), reinterpret_cast<void*>(&::realloc)},
          {"free", reinterpret_cast<void*>(&hook_free), reinterpret_cast<void*>(&::free)},
          {"posix_memalign", reinterpret_cast<void*>(&hook_posix_memalign),
           reinterpret_cast<void*>(&::posix_memalign)},
          {"aligned_alloc", reinterpret_cast<void*>(&hook_aligned_alloc),
           reinterpret_cast<void*>(&::aligned_alloc)},
          {"memalign", reinterpret_cast<void*>(&hook_memalign),
           reinterpret_cast<void*>(&::memalign)},
          {"valloc", reinterpret_cast<void*>(&hook_valloc), reinterpret_cast<void*>(&::valloc)},
          {"pvalloc", reinterpret_cast<void*>(&hook_pvalloc), reinterpret_cast<void*>(&::pvalloc)},
          {"memcpy", reinterpret_cast<void*>(&hook_memcpy), reinterpret_cast<void*>(&::memcpy)},
          {"memmove", reinterpret_cast<void*>(&hook_memmove), reinterpret_cast<void*>(&::memmove)},
          {"mmap", reinterpret_cast<void*>(&hook_mmap), reinterpret_cast<void*>(&::mmap)},
          {"mmap64", reinterpret_cast<void*>(&hook_mmap), reinterpret_cast<void*>(&::mmap64)},
          {"munmap", reinterpret_cast<void*>(&hook_munmap), reinterpret_cast<void*>(&::munmap)},
          {"mremap", reinterpret_cast<void*>(&hook_mremap), reinterpret_cast<void*>(&::mremap)},
          {"dlopen", reinterpret_cast<void*>(&hook_dlopen), reinterpret_cast<void*>(&::dlopen)},
          {"dlmopen", reinterpret_cast<void*>(&hook_dlmopen), reinterpret_cast<void*>(&::dlmopen)},
          {"pthread_cond_wait", reinterpret_cast<void*>(&hook_cond_wait),
           reinterpret_cast<void*>(&::pthread_cond_wait)},
          {"pthread_cond_timedwait", reinterpret_cast<void*>(&hook_cond_timedwait),
           reinterpret_cast<void*>(&::pthread_cond_timedwait)},
      },
      reinterpret_cast<const void*>(&hook_malloc));
  return *made;
}

}  // namespace spyglass::shim::hooks
