// An allocator for the profiler's own large, long-lived tables (the compiled unwind rows),
// taking whole pages from the kernel rather than blocks from the C allocator. Compiling
// pyarrow's libraries' rows grew vectors to tens of megabytes inside the program's own
// heap: once freed, glibc kept those blocks (its mmap threshold rises after a large free)
// and a pandas read_csv ended with 47 MB more resident than without spyglass, and with a
// different heap layout, which changes the program's own allocation costs. Pages given
// back are gone at once, and the program's heap is left as it would be.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>

namespace spyglass::platform {

template <typename T>
struct PageAllocator {
  using value_type = T;

  PageAllocator() = default;
  template <typename U>
  PageAllocator(const PageAllocator<U>& /*other*/) noexcept {
  }  // NOLINT: converting, as allocators are

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    void* p =
        mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept { munmap(p, n * sizeof(T)); }

  template <typename U>
  bool operator==(const PageAllocator<U>& /*other*/) const noexcept {
    return true;
  }
};

}  // namespace spyglass::platform
