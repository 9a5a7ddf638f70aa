#include "core/line_visits.hpp"

#include <gtest/gtest.h>

namespace spyglass {
namespace {

constexpr uint64_t kLoopLine = 10;
constexpr uint64_t kOtherLine = 11;

TEST(LineVisits, AVisitToAnotherLineBeforeTheAllocationSaysTheThreadLeft) {
  LineVisits visits;
  visits.visited(1, 100, kOtherLine);
  EXPECT_TRUE(visits.left(1, 150, kLoopLine));
  EXPECT_FALSE(visits.left(1, 200, kLoopLine));  // consumed
}

TEST(LineVisits, VisitsToTheSameLineDoNot) {
  LineVisits visits;
  visits.visited(1, 100, kLoopLine);
  visits.visited(1, 120, kLoopLine);
  EXPECT_FALSE(visits.left(1, 150, kLoopLine));
}

TEST(LineVisits, AVisitAfterTheAllocationWaitsForTheNextOne) {
  // Drained before an allocation that came earlier: it is read by the allocation after.
  LineVisits visits;
  visits.visited(1, 300, kOtherLine);
  EXPECT_FALSE(visits.left(1, 250, kLoopLine));
  EXPECT_TRUE(visits.left(1, 350, kLoopLine));
}

TEST(LineVisits, ThreadsAreApart) {
  LineVisits visits;
  visits.visited(1, 100, kOtherLine);
  EXPECT_FALSE(visits.left(2, 150, kLoopLine));
  EXPECT_TRUE(visits.left(1, 150, kLoopLine));
}

TEST(LineVisits, ALongRunOfVisitsKeepsItsEarliestAndStaysBounded) {
  LineVisits visits;
  for (uint64_t i = 0; i < 10 * LineVisits::kMaxPending; ++i) {
    visits.visited(1, 100 + i, i % 2 == 0 ? kLoopLine : kOtherLine);
  }
  EXPECT_EQ(visits.pending(1), LineVisits::kMaxPending);
  // The first visit elsewhere, at 101, is kept.
  EXPECT_TRUE(visits.left(1, 102, kLoopLine));
  EXPECT_FALSE(visits.left(1, 102, kLoopLine));
}

TEST(LineVisits, AnEndedThreadIsForgotten) {
  LineVisits visits;
  visits.visited(7, 100, kOtherLine);
  EXPECT_EQ(visits.threads(), 1u);
  visits.forget(7);
  EXPECT_EQ(visits.threads(), 0u);
  EXPECT_FALSE(visits.left(7, 150, kLoopLine));
}

}  // namespace
}  // namespace spyglass
