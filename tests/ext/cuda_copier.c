/* Copies known byte counts between host and "device" memory through the fake CUDA runtime
   and driver (fake_cuda.c), each call through this library's own offset table, as an
   extension linked to libcudart or libcuda makes them. One entry point per copy path, so
   that the test program makes each from a line of its own. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long CUdeviceptr;

int cudaMemcpy(void *, const void *, size_t, int);
int cudaMemcpyAsync(void *, const void *, size_t, int, void *);
int cudaMemcpy2D(void *, size_t, const void *, size_t, size_t, size_t, int);
int cudaMemcpy2DAsync(void *, size_t, const void *, size_t, size_t, size_t, int, void *);
int cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
int cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
int cuMemcpyDtoD_v2(CUdeviceptr, CUdeviceptr, size_t);
int cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, void *);
int cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, void *);
int cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, size_t, void *);
int cuMemcpy(CUdeviceptr, CUdeviceptr, size_t);
int cuMemcpyAsync(CUdeviceptr, CUdeviceptr, size_t, void *);
void *fake_device_alloc(size_t);
void fake_driver_register(void *, size_t);

static size_t capacity;
static char *host;
static char *dev_a;
static char *dev_b;

#define D(p) ((CUdeviceptr)(uintptr_t)(p))
/* A copy larger than the buffers is refused rather than overrunning them. */
#define FITS(n) \
  if ((n) > capacity) return -1

/* Buffers of `size` bytes: one on the host, two on the "device" (the runtime's). */
int copier_setup(size_t size) {
  capacity = size;
  host = malloc(size);
  dev_a = fake_device_alloc(size);
  dev_b = fake_device_alloc(size);
  if (host == NULL || dev_a == NULL || dev_b == NULL) return -1;
  fake_driver_register(dev_a, size);
  fake_driver_register(dev_b, size);
  memset(host, 1, size);
  return 0;
}

/* kind: cudaMemcpyKind (0..4); the pointers follow from it (4, Default: host to device). */
static void pick(int kind, void **dst, void **src) {
  *dst = kind == 0 || kind == 2 ? host : dev_a;
  *src = kind == 2 || kind == 3 ? dev_b : host;
}

int rt_copy(int kind, size_t n) {
  FITS(n);
  void *dst, *src;
  pick(kind, &dst, &src);
  return cudaMemcpy(dst, src, n, kind);
}
/* cudaMemcpyDefault from device to host: the direction comes from the pointers. */
int rt_default_dtoh(size_t n) {
  FITS(n);
  return cudaMemcpy(host, dev_a, n, 4);
}
int rt_copy_async(int kind, size_t n) {
  FITS(n);
  void *dst, *src;
  pick(kind, &dst, &src);
  return cudaMemcpyAsync(dst, src, n, kind, NULL);
}
int rt_copy_2d(int kind, size_t width, size_t height) {
  FITS(height * (width + 16));
  void *dst, *src;
  pick(kind, &dst, &src);
  return cudaMemcpy2D(dst, width + 16, src, width, width, height, kind);
}
int rt_copy_2d_async(int kind, size_t width, size_t height) {
  FITS(height * (width + 8));
  void *dst, *src;
  pick(kind, &dst, &src);
  return cudaMemcpy2DAsync(dst, width, src, width + 8, width, height, kind, NULL);
}
/* Many small copies from one line: `count` of `n` bytes. */
int rt_many(int kind, size_t n, int count) {
  for (int i = 0; i < count; ++i) {
    if (rt_copy(kind, n) != 0) return -1;
  }
  return 0;
}

int drv_htod(size_t n) {
  FITS(n);
  return cuMemcpyHtoD_v2(D(dev_a), host, n);
}
int drv_dtoh(size_t n) {
  FITS(n);
  return cuMemcpyDtoH_v2(host, D(dev_a), n);
}
int drv_dtod(size_t n) {
  FITS(n);
  return cuMemcpyDtoD_v2(D(dev_a), D(dev_b), n);
}
int drv_htod_async(size_t n) {
  FITS(n);
  return cuMemcpyHtoDAsync_v2(D(dev_a), host, n, NULL);
}
int drv_dtoh_async(size_t n) {
  FITS(n);
  return cuMemcpyDtoHAsync_v2(host, D(dev_a), n, NULL);
}
int drv_dtod_async(size_t n) {
  FITS(n);
  return cuMemcpyDtoDAsync_v2(D(dev_a), D(dev_b), n, NULL);
}
/* Unified addressing: cuMemcpy between a host buffer and the device. */
int drv_any_dtoh(size_t n) {
  FITS(n);
  return cuMemcpy(D(host), D(dev_a), n);
}
int drv_any_htod_async(size_t n) {
  FITS(n);
  return cuMemcpyAsync(D(dev_b), D(host), n, NULL);
}
