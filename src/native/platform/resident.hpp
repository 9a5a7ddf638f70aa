// How much of a mapping is resident: mincore's page-by-page answer, summed. For the
// collector's thread (it fills a vector of a byte per page: 256 KiB for a 1 GiB mapping).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace spyglass::platform {

// False when any of [start, start + length) is not mapped (unmapped since it was listed).
inline bool resident_bytes(uintptr_t start, size_t length, std::vector<unsigned char>* pages,
                           uint64_t* out) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (length == 0 || start % page != 0) return false;
  const size_t count = (length + page - 1) / page;
  pages->resize(count);
  // NOLINTNEXTLINE(performance-no-int-to-ptr): an address the program mapped
  if (mincore(reinterpret_cast<void*>(start), length, pages->data()) != 0) return false;
  uint64_t resident = 0;
  for (const unsigned char p : *pages) resident += p & 1;
  *out = resident * page;
  return true;
}

}  // namespace spyglass::platform
