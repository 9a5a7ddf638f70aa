// Cost accounting shared by every layer: what one sample, line, function or thread costs.
#pragma once

#include <cstdint>

namespace spyglass {

// Nanosecond and byte totals; a profile's seconds and megabytes are derived from these
// only when written out, so adding up many samples loses nothing to rounding.
struct Times {
  uint64_t python_ns = 0;  // interpreter executing bytecode
  uint64_t native_ns = 0;  // C/C++ code called from a line (builtins, extensions, libraries)
  uint64_t system_ns = 0;  // kernel time on the thread's behalf
  uint64_t wait_ns = 0;    // wall time off-CPU (sleep, I/O, locks, GIL)
  uint64_t samples = 0;    // CPU samples behind the figures (for uncertainty)
  uint64_t gc_ns = 0;      // of python_ns, the garbage collector's
  // Wall time asyncio tasks spent suspended at an await (per task, so concurrent tasks'
  // awaits add up beyond the wall time); not part of the thread's CPU or wait.
  uint64_t await_ns = 0;

  // Memory samples: the net bytes each one carried, split by sign.
  uint64_t alloc_bytes = 0;         // net growth samples
  uint64_t alloc_python_bytes = 0;  // of which made through Python's allocator
  uint64_t free_bytes = 0;          // net shrink samples
  uint64_t copy_bytes = 0;          // memcpy-family volume
  uint64_t mem_samples = 0;
  // Copies through a CUDA library's entry points, by direction (shim/cuda_copy_hooks.hpp).
  uint64_t cuda_htod_bytes = 0;
  uint64_t cuda_dtoh_bytes = 0;
  uint64_t cuda_dtod_bytes = 0;

  Times& operator+=(const Times& o) {
    python_ns += o.python_ns;
    native_ns += o.native_ns;
    system_ns += o.system_ns;
    wait_ns += o.wait_ns;
    samples += o.samples;
    gc_ns += o.gc_ns;
    await_ns += o.await_ns;
    alloc_bytes += o.alloc_bytes;
    alloc_python_bytes += o.alloc_python_bytes;
    free_bytes += o.free_bytes;
    copy_bytes += o.copy_bytes;
    mem_samples += o.mem_samples;
    cuda_htod_bytes += o.cuda_htod_bytes;
    cuda_dtoh_bytes += o.cuda_dtoh_bytes;
    cuda_dtod_bytes += o.cuda_dtod_bytes;
    return *this;
  }
  uint64_t cpu_ns() const { return python_ns + native_ns + system_ns; }
  uint64_t cuda_bytes() const { return cuda_htod_bytes + cuda_dtoh_bytes + cuda_dtod_bytes; }
  bool empty() const {
    return cpu_ns() == 0 && wait_ns == 0 && await_ns == 0 && samples == 0 && mem_samples == 0 &&
           copy_bytes == 0 && cuda_bytes() == 0;
  }
};

}  // namespace spyglass
