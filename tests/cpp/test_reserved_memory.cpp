#include "core/reserved_memory.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace spyglass {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

struct Ids {
  uint32_t next = 100;
  uint32_t operator()() { return next++; }
};

int64_t net(const std::vector<ReservedMemory::Change>& changes) {
  int64_t sum = 0;
  for (const auto& c : changes) sum += c.bytes;
  return sum;
}

TEST(ReservedMemory, NothingIsChargedBeforeItsRecordIsResolved) {
  ReservedMemory reserved;
  Ids ids;
  std::vector<ReservedMemory::Change> out;
  reserved.measured(1, 64 * kMiB, ids, &out);
  EXPECT_TRUE(out.empty());
}

TEST(ReservedMemory, GrowthIsChargedToItsOwnerInPieces) {
  ReservedMemory reserved;
  Ids ids;
  std::vector<ReservedMemory::Change> out;
  reserved.noted(1, ReservedMemory::Owner{7, 42, true, 9, false});
  reserved.measured(1, 96 * kMiB, ids, &out);
  EXPECT_EQ(net(out), static_cast<int64_t>(96 * kMiB));
  EXPECT_EQ(out.size(), ReservedMemory::kPieces);
  EXPECT_TRUE(out.front().first);
  EXPECT_FALSE(out.back().first);
  for (const auto& c : out) {
    EXPECT_EQ(c.owner.stack, 7u);
    EXPECT_EQ(c.owner.line, 42u);
  }
  out.clear();
  reserved.measured(1, 96 * kMiB + 4096, ids, &out);  // less than a step: left for later
  EXPECT_TRUE(out.empty());
}

TEST(ReservedMemory, PagesGivenBackFreeTheLatestWholePiecesNoneMadeAgain) {
  ReservedMemory reserved;
  Ids ids;
  std::vector<ReservedMemory::Change> out;
  reserved.noted(1, ReservedMemory::Owner{7, 42, true, 9, false});
  reserved.measured(1, 96 * kMiB, ids, &out);
  out.clear();
  reserved.measured(1, 32 * kMiB, ids, &out);
  for (const auto& c : out) EXPECT_LT(c.bytes, 0) << "a piece made again";
  EXPECT_GE(reserved.resident(1), 32 * kMiB);
  EXPECT_LT(reserved.resident(1), 32 * kMiB + 96 * kMiB / ReservedMemory::kPieces);
  EXPECT_EQ(static_cast<int64_t>(reserved.resident(1)), static_cast<int64_t>(96 * kMiB) + net(out));
}

TEST(ReservedMemory, AnUnmappedReservationFreesEveryPiece) {
  ReservedMemory reserved;
  Ids ids;
  std::vector<ReservedMemory::Change> out;
  reserved.noted(1, ReservedMemory::Owner{7, 42, true, 9, false});
  reserved.noted(2, ReservedMemory::Owner{8, 43, true, 9, false});
  reserved.measured(1, 8 * kMiB, ids, &out);
  reserved.measured(2, 4 * kMiB, ids, &out);
  out.clear();
  reserved.keep_only({2}, &out);
  EXPECT_EQ(net(out), -static_cast<int64_t>(8 * kMiB));
  EXPECT_EQ(reserved.resident(1), 0u);
  EXPECT_EQ(reserved.resident(2), 4 * kMiB);
}

}  // namespace
}  // namespace spyglass
