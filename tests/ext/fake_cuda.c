/* A stand-in for the CUDA runtime (built as libcudart.so.12) or, with -DFAKE_CUDA_DRIVER,
   the driver (libcuda.so.1) for the copy-volume tests: the copy entry points spyglass
   redirects, with CUDA's names and signatures, and the pointer queries it asks for the
   direction of a unified-addressing copy. "Device memory" is host memory this library
   handed out (fake_device_alloc; the driver is told of it), so that copies are plain memcpys and a pointer's kind is
   whether it lies in one of those blocks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BLOCKS 64

static struct {
  char *base;
  size_t size;
} blocks[MAX_BLOCKS];

static int on_device(const void *p) {
  const char *c = (const char *)p;
  for (int i = 0; i < MAX_BLOCKS; ++i) {
    if (blocks[i].base != NULL && c >= blocks[i].base && c < blocks[i].base + blocks[i].size)
      return 1;
  }
  return 0;
}

static void remember(char *base, size_t size) {
  for (int i = 0; i < MAX_BLOCKS; ++i) {
    if (blocks[i].base == NULL) {
      blocks[i].base = base;
      blocks[i].size = size;
      return;
    }
  }
}

#ifndef FAKE_CUDA_DRIVER
/* Device memory of `size` bytes (the test's own entry point). */
void *fake_device_alloc(size_t size) {
  char *p = malloc(size);
  if (p != NULL) remember(p, size);
  return p;
}
#else
/* The driver is told of the runtime's device memory, as the real ones share it. */
void fake_driver_register(void *p, size_t size) { remember(p, size); }
#endif

#ifndef FAKE_CUDA_DRIVER

typedef int cudaError_t;
typedef void *cudaStream_t;

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
  (void)kind;
  memcpy(dst, src, n);
  return 0;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, cudaStream_t s) {
  (void)s;
  return cudaMemcpy(dst, src, n, kind);
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, int kind) {
  (void)kind;
  for (size_t row = 0; row < height; ++row)
    memcpy((char *)dst + row * dpitch, (const char *)src + row * spitch, width);
  return 0;
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, int kind, cudaStream_t s) {
  (void)s;
  return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}

/* CUDA 11's layout: the memory type first (0 unregistered, 1 host, 2 device, 3 managed). */
struct cudaPointerAttributes {
  int type;
  int device;
  void *devicePointer;
  void *hostPointer;
};

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p) {
  memset(a, 0, sizeof *a);
  a->type = on_device(p) ? 2 : 0;
  return 0;
}

#else

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUstream;

#define PTR(d) ((void *)(uintptr_t)(d))

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  memcpy(PTR(dst), src, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  memcpy(dst, PTR(src), n);
  return 0;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  memcpy(PTR(dst), PTR(src), n);
  return 0;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  (void)s;
  return cuMemcpyHtoD_v2(dst, src, n);
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  (void)s;
  return cuMemcpyDtoH_v2(dst, src, n);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  (void)s;
  return cuMemcpyDtoD_v2(dst, src, n);
}
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return cuMemcpyDtoD_v2(dst, src, n);
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  (void)s;
  return cuMemcpy(dst, src, n);
}

/* CU_POINTER_ATTRIBUTE_MEMORY_TYPE (2) only; host memory the driver does not know is an
   error, as it is for the real one. */
CUresult cuPointerGetAttribute(void *data, int attribute, CUdeviceptr p) {
  if (attribute != 2 || !on_device(PTR(p))) return 1;
  *(unsigned *)data = 2; /* CU_MEMORYTYPE_DEVICE */
  return 0;
}

#endif
