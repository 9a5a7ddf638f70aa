/* A shared library that calls the C allocator and memcpy through its own offset table, as
 * any extension module does; the hook tests patch it. Built with -fno-builtin so that the
 * compiler keeps every call. */
#include <malloc.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

void* helper_malloc(size_t n) { return malloc(n); }
void* helper_calloc(size_t n, size_t m) { return calloc(n, m); }
void* helper_realloc(void* p, size_t n) { return realloc(p, n); }
void helper_free(void* p) { free(p); }
void* helper_posix_memalign(size_t alignment, size_t n) {
  void* p = NULL;
  return posix_memalign(&p, alignment, n) == 0 ? p : NULL;
}
void* helper_aligned_alloc(size_t alignment, size_t n) { return aligned_alloc(alignment, n); }
void* helper_memalign(size_t alignment, size_t n) { return memalign(alignment, n); }
void* helper_valloc(size_t n) { return valloc(n); }
void* helper_memcpy(void* dst, const void* src, size_t n) { return memcpy(dst, src, n); }
void* helper_memmove(void* dst, const void* src, size_t n) { return memmove(dst, src, n); }
void* helper_mmap(size_t n, int prot, int flags) { return mmap(NULL, n, prot, flags, -1, 0); }
int helper_munmap(void* p, size_t n) { return munmap(p, n); }
