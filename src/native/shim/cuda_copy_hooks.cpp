#include "cuda_copy_hooks.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "../platform/got_patcher.hpp"
#include "memory_hooks.hpp"

namespace spyglass::shim::cuda {

namespace {

// CUDA's C types, as its public headers declare them: every error type is an int enum, a
// stream an opaque pointer, a device address 64 bits.
using Status = int;
using Stream = void*;
using DevicePtr = unsigned long long;

// cudaMemcpyKind, and what the runtime calls a pointer's memory (cudaMemoryType).
constexpr int kHostToHost = 0;
constexpr int kHostToDevice = 1;
constexpr int kDeviceToHost = 2;
constexpr int kDeviceToDevice = 3;
constexpr int kRuntimeDevice = 2;
constexpr int kRuntimeManaged = 3;
// CU_POINTER_ATTRIBUTE_MEMORY_TYPE, and the driver's CUmemorytype for host memory.
constexpr int kAttributeMemoryType = 2;
constexpr unsigned kDriverHost = 1;

// The library's own entry points, one slot per symbol the hooks call (the redirects' and
// the pointer queries'). Written once, before the first entry is redirected.
enum Slot : int {
  kMemcpy,
  kMemcpyAsync,
  kMemcpy2D,
  kMemcpy2DAsync,
  kMemcpyPtds,
  kMemcpyAsyncPtsz,
  kMemcpy2DPtds,
  kMemcpy2DAsyncPtsz,
  kPointerAttributes,  // cudaPointerGetAttributes: not redirected
  kHtoD,
  kHtoDAsync,
  kDtoH,
  kDtoHAsync,
  kDtoD,
  kDtoDAsync,
  kCopy,
  kCopyAsync,
  kPointerAttribute,  // cuPointerGetAttribute: not redirected
  kSlots
};
void* g_real[kSlots] = {};

template <typename Fn>
Fn real(Slot s) {
  return reinterpret_cast<Fn>(g_real[s]);
}

// Where memory of an unknown kind lives, as the library sees it. A pointer the library
// does not know (plain host memory, or a query that fails) is host memory; managed memory
// counts as the device's.
bool runtime_on_device(const void* p) {
  // cudaPointerAttributes since CUDA 11 starts with the memory type; room to spare for
  // the members after it.
  struct {
    int type;
    int rest[15];
  } attributes{};
  const auto query = real<Status (*)(void*, const void*)>(kPointerAttributes);
  if (query == nullptr || query(&attributes, p) != 0) return false;
  return attributes.type == kRuntimeDevice || attributes.type == kRuntimeManaged;
}

bool driver_on_device(DevicePtr p) {
  unsigned type = 0;
  const auto query = real<Status (*)(void*, int, DevicePtr)>(kPointerAttribute);
  if (query == nullptr || query(&type, kAttributeMemoryType, p) != 0) return false;
  return type != kDriverHost;
}

CopyKind direction(bool from_device, bool to_device) {
  if (from_device) return to_device ? CopyKind::kDeviceToDevice : CopyKind::kDeviceToHost;
  return to_device ? CopyKind::kHostToDevice : CopyKind::kHost;  // host to host: not ours
}

void count_runtime(const void* dst, const void* src, size_t bytes, int kind) {
  if (bytes == 0) return;
  switch (kind) {
    case kHostToHost:
      return;
    case kHostToDevice:
      record_cuda_copy(bytes, CopyKind::kHostToDevice);
      return;
    case kDeviceToHost:
      record_cuda_copy(bytes, CopyKind::kDeviceToHost);
      return;
    case kDeviceToDevice:
      record_cuda_copy(bytes, CopyKind::kDeviceToDevice);
      return;
    default:  // cudaMemcpyDefault: unified addressing tells from the pointers
      record_cuda_copy(bytes, direction(runtime_on_device(src), runtime_on_device(dst)));
  }
}

// The redirects. Each calls the library's own entry point, then counts what it copied
// (nothing when the call failed). One instantiation per symbol: each has its own slot.
template <Slot S>
Status rt_copy(void* dst, const void* src, size_t n, int kind) {
  const Status rc = real<Status (*)(void*, const void*, size_t, int)>(S)(dst, src, n, kind);
  if (rc == 0) count_runtime(dst, src, n, kind);
  return rc;
}
template <Slot S>
Status rt_copy_async(void* dst, const void* src, size_t n, int kind, Stream stream) {
  const Status rc =
      real<Status (*)(void*, const void*, size_t, int, Stream)>(S)(dst, src, n, kind, stream);
  if (rc == 0) count_runtime(dst, src, n, kind);
  return rc;
}
template <Slot S>
Status rt_copy_2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                  size_t height, int kind) {
  const Status rc = real<Status (*)(void*, size_t, const void*, size_t, size_t, size_t, int)>(S)(
      dst, dpitch, src, spitch, width, height, kind);
  if (rc == 0) count_runtime(dst, src, width * height, kind);
  return rc;
}
template <Slot S>
Status rt_copy_2d_async(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                        size_t height, int kind, Stream stream) {
  const Status rc =
      real<Status (*)(void*, size_t, const void*, size_t, size_t, size_t, int, Stream)>(S)(
          dst, dpitch, src, spitch, width, height, kind, stream);
  if (rc == 0) count_runtime(dst, src, width * height, kind);
  return rc;
}

// The driver's: the direction is in the name, but for cuMemcpy(Async).
template <Slot S, CopyKind K, typename Dst, typename Src>
Status drv_copy(Dst dst, Src src, size_t n) {
  const Status rc = real<Status (*)(Dst, Src, size_t)>(S)(dst, src, n);
  if (rc == 0 && n != 0) record_cuda_copy(n, K);
  return rc;
}
template <Slot S, CopyKind K, typename Dst, typename Src>
Status drv_copy_async(Dst dst, Src src, size_t n, Stream stream) {
  const Status rc = real<Status (*)(Dst, Src, size_t, Stream)>(S)(dst, src, n, stream);
  if (rc == 0 && n != 0) record_cuda_copy(n, K);
  return rc;
}
void count_driver(DevicePtr dst, DevicePtr src, size_t n) {
  if (n != 0) record_cuda_copy(n, direction(driver_on_device(src), driver_on_device(dst)));
}
Status drv_copy_any(DevicePtr dst, DevicePtr src, size_t n) {
  const Status rc = real<Status (*)(DevicePtr, DevicePtr, size_t)>(kCopy)(dst, src, n);
  if (rc == 0) count_driver(dst, src, n);
  return rc;
}
Status drv_copy_any_async(DevicePtr dst, DevicePtr src, size_t n, Stream stream) {
  const Status rc =
      real<Status (*)(DevicePtr, DevicePtr, size_t, Stream)>(kCopyAsync)(dst, src, n, stream);
  if (rc == 0) count_driver(dst, src, n);
  return rc;
}

struct Entry {
  Slot slot;
  const char* symbol;
  void* replacement;  // null: looked up for the hooks' own use only
};

const Entry kRuntimeEntries[] = {
    {kMemcpy, "cudaMemcpy", reinterpret_cast<void*>(&rt_copy<kMemcpy>)},
    {kMemcpyAsync, "cudaMemcpyAsync", reinterpret_cast<void*>(&rt_copy_async<kMemcpyAsync>)},
    {kMemcpy2D, "cudaMemcpy2D", reinterpret_cast<void*>(&rt_copy_2d<kMemcpy2D>)},
    {kMemcpy2DAsync, "cudaMemcpy2DAsync",
     reinterpret_cast<void*>(&rt_copy_2d_async<kMemcpy2DAsync>)},
    // Code built for a per-thread default stream calls these instead.
    {kMemcpyPtds, "cudaMemcpy_ptds", reinterpret_cast<void*>(&rt_copy<kMemcpyPtds>)},
    {kMemcpyAsyncPtsz, "cudaMemcpyAsync_ptsz",
     reinterpret_cast<void*>(&rt_copy_async<kMemcpyAsyncPtsz>)},
    {kMemcpy2DPtds, "cudaMemcpy2D_ptds", reinterpret_cast<void*>(&rt_copy_2d<kMemcpy2DPtds>)},
    {kMemcpy2DAsyncPtsz, "cudaMemcpy2DAsync_ptsz",
     reinterpret_cast<void*>(&rt_copy_2d_async<kMemcpy2DAsyncPtsz>)},
    {kPointerAttributes, "cudaPointerGetAttributes", nullptr},
};

constexpr auto kH2D = CopyKind::kHostToDevice;
constexpr auto kD2H = CopyKind::kDeviceToHost;
constexpr auto kD2D = CopyKind::kDeviceToDevice;
const Entry kDriverEntries[] = {
    {kHtoD, "cuMemcpyHtoD_v2",
     reinterpret_cast<void*>(&drv_copy<kHtoD, kH2D, DevicePtr, const void*>)},
    {kHtoDAsync, "cuMemcpyHtoDAsync_v2",
     reinterpret_cast<void*>(&drv_copy_async<kHtoDAsync, kH2D, DevicePtr, const void*>)},
    {kDtoH, "cuMemcpyDtoH_v2", reinterpret_cast<void*>(&drv_copy<kDtoH, kD2H, void*, DevicePtr>)},
    {kDtoHAsync, "cuMemcpyDtoHAsync_v2",
     reinterpret_cast<void*>(&drv_copy_async<kDtoHAsync, kD2H, void*, DevicePtr>)},
    {kDtoD, "cuMemcpyDtoD_v2",
     reinterpret_cast<void*>(&drv_copy<kDtoD, kD2D, DevicePtr, DevicePtr>)},
    {kDtoDAsync, "cuMemcpyDtoDAsync_v2",
     reinterpret_cast<void*>(&drv_copy_async<kDtoDAsync, kD2D, DevicePtr, DevicePtr>)},
    {kCopy, "cuMemcpy", reinterpret_cast<void*>(&drv_copy_any)},
    {kCopyAsync, "cuMemcpyAsync", reinterpret_cast<void*>(&drv_copy_any_async)},
    {kPointerAttribute, "cuPointerGetAttribute", nullptr},
};

// One CUDA library: found by its file name among the loaded objects, then patched for good.
struct Library {
  const char* prefix;  // of the file name: libcudart.so.12, libcudart-1a2b3c4d.so.11.0, ...
  const Entry* entries;
  size_t count;
  platform::GotPatcher* patcher = nullptr;  // made once found; kept for the process
};
Library g_libraries[] = {
    {"libcudart", kRuntimeEntries, sizeof kRuntimeEntries / sizeof kRuntimeEntries[0]},
    {"libcuda.so", kDriverEntries, sizeof kDriverEntries / sizeof kDriverEntries[0]},
};
std::mutex g_mutex;  // held across fork, as the patchers' own locks are
bool g_active = false;

const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

// The path of the first loaded object whose name starts with `prefix`; empty if none.
std::string find_loaded(const char* prefix) {
  struct Search {
    const char* prefix;
    std::string path;
  } search{prefix, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (std::strncmp(base_name(name), s->prefix, std::strlen(s->prefix)) != 0) return 0;
        s->path = name;
        return 1;
      },
      &search);
  return search.path;
}

// Looks the library's entry points up in the copy already loaded (RTLD_NOLOAD: never a
// load of our own) and makes its patcher. False while it is not loaded.
bool open_library(Library& lib) {
  const std::string path = find_loaded(lib.prefix);
  if (path.empty()) return false;
  void* handle = dlopen(path.c_str(), RTLD_NOLOAD | RTLD_LAZY);
  if (handle == nullptr) return false;  // still being loaded: next time
  std::vector<platform::Redirect> redirects;
  const void* inside = nullptr;
  for (size_t i = 0; i < lib.count; ++i) {
    const Entry& e = lib.entries[i];
    void* definition = dlsym(handle, e.symbol);
    g_real[e.slot] = definition;
    if (definition == nullptr) continue;
    inside = definition;
    if (e.replacement != nullptr) redirects.push_back({e.symbol, e.replacement, definition});
  }
  dlclose(handle);  // it stays loaded: the program holds it
  if (redirects.empty()) return false;
  // The library's own calls to its entry points are not the program's copies.
  lib.patcher = new platform::GotPatcher(std::move(redirects),
                                         reinterpret_cast<const void*>(&count_runtime), inside);
  return true;
}

}  // namespace

void refresh() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_active = true;
  for (Library& lib : g_libraries) {
    if (lib.patcher == nullptr && !open_library(lib)) continue;
    lib.patcher->set_active(true);
    if (lib.patcher->objects_changed()) lib.patcher->patch_new_objects();
  }
}

void restore() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_active) return;
  g_active = false;
  for (Library& lib : g_libraries) {
    if (lib.patcher != nullptr) lib.patcher->restore();
  }
}

void before_fork() {
  g_mutex.lock();
  for (Library& lib : g_libraries) {
    if (lib.patcher != nullptr) lib.patcher->lock_for_fork();
  }
}

void after_fork_parent() {
  for (Library& lib : g_libraries) {
    if (lib.patcher != nullptr) lib.patcher->unlock_after_fork();
  }
  g_mutex.unlock();
}

void after_fork_child() {
  for (Library& lib : g_libraries) {
    if (lib.patcher != nullptr) lib.patcher->unlock_after_fork_child();
  }
  new (&g_mutex) std::mutex();  // held by the forking thread: a fresh one, as the patcher's
}

}  // namespace spyglass::shim::cuda
