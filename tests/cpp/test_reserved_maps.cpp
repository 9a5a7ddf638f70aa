// The table of reservations the hooks keep (shim/reserved_maps.hpp), through mappings made
// by the helper library, as an allocator inside an extension module makes them.
#include "shim/reserved_maps.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "shim/memory_hooks.hpp"

extern "C" {
void* helper_mmap(size_t n, int prot, int flags);
int helper_munmap(void* p, size_t n);
}

namespace spyglass::shim {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr int kReserve = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

uint16_t no_stack(uint32_t, pid_t, RawFrame* out, bool* truncated) {
  out[0].code = 0x1000;
  out[0].instr_offset = 0;
  *truncated = false;
  return 1;
}
bool never_interpreter(uintptr_t) { return false; }

std::vector<ReservedMap> listed() {
  std::vector<ReservedMap> out(kReservedSlots);
  out.resize(reserved_maps(out.data(), out.size()));
  return out;
}

bool lists(const std::vector<ReservedMap>& maps, const void* start, size_t length) {
  for (const ReservedMap& m : maps) {
    if (m.start == reinterpret_cast<uintptr_t>(start) && m.length == length) return true;
  }
  return false;
}

void drain() {
  while (records().front() != nullptr) records().pop();
}

TEST(ReservedMaps, ReservationsAreListedTrimmedAndForgotten) {
  ASSERT_TRUE(start(HookOptions{}, HookCallbacks{&no_stack, &never_interpreter, nullptr}));
  EXPECT_TRUE(listed().empty());
  // Too small, or memory the program uses at once: mappings as any other.
  void* small = helper_mmap(kMiB / 2, PROT_NONE, kReserve);
  void* used = helper_mmap(4 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
  EXPECT_TRUE(listed().empty());
  char* a = static_cast<char*>(helper_mmap(8 * kMiB, PROT_READ | PROT_WRITE, kReserve));
  char* b = static_cast<char*>(helper_mmap(4 * kMiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS));
  std::vector<ReservedMap> maps = listed();
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_TRUE(lists(maps, a, 8 * kMiB));
  EXPECT_TRUE(lists(maps, b, 4 * kMiB));
  // An allocator aligning its arena trims both ends.
  helper_munmap(a, kMiB);
  helper_munmap(a + 7 * kMiB, kMiB);
  maps = listed();
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_TRUE(lists(maps, a + kMiB, 6 * kMiB));
  // A hole ends it; the other stays listed, and a new one takes the freed slot.
  helper_munmap(a + 3 * kMiB, kMiB);
  maps = listed();
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_TRUE(lists(maps, b, 4 * kMiB));
  char* c = static_cast<char*>(helper_mmap(2 * kMiB, PROT_NONE, kReserve));
  maps = listed();
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_TRUE(lists(maps, c, 2 * kMiB));
  EXPECT_LT(std::min(maps[0].slot, maps[1].slot), 2u);
  EXPECT_LT(std::max(maps[0].slot, maps[1].slot), 2u);
  helper_munmap(b, 4 * kMiB);
  helper_munmap(c, 2 * kMiB);
  EXPECT_TRUE(listed().empty());
  stop();
  helper_munmap(a + kMiB, 2 * kMiB);
  helper_munmap(a + 4 * kMiB, 3 * kMiB);
  helper_munmap(small, kMiB / 2);
  helper_munmap(used, 4 * kMiB);
  drain();
}

TEST(ReservedMaps, ANewStartListsNoneOfTheLastOnes) {
  ASSERT_TRUE(start(HookOptions{}, HookCallbacks{&no_stack, &never_interpreter, nullptr}));
  void* kept = helper_mmap(2 * kMiB, PROT_NONE, kReserve);
  EXPECT_EQ(listed().size(), 1u);
  stop();
  drain();
  ASSERT_TRUE(start(HookOptions{}, HookCallbacks{&no_stack, &never_interpreter, nullptr}));
  EXPECT_TRUE(listed().empty());
  helper_munmap(kept, 2 * kMiB);
  stop();
  drain();
}

}  // namespace
}  // namespace spyglass::shim
