#include "cpython/library_waits.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace spyglass::cpython {
namespace {

constexpr uint64_t kPackage = 7;
constexpr uint64_t kWindow = 40;
constexpr uint64_t kInterval = kWindow / kLendIntervals;
constexpr uint64_t kLead = 2 * kInterval;  // how long before its wait began a note lends

auto of_package = [](uint64_t package) { return package == kPackage; };

// Threads' CPU clocks and states as the kernel would read them; an absent thread has ended.
struct Clocks {
  std::map<pid_t, uint64_t> now;
  std::set<pid_t> blocked_now;
  int reads = 0;
  bool cpu_ns(pid_t tid, uint64_t* ns) {
    ++reads;
    auto it = now.find(tid);
    if (it == now.end()) return false;
    *ns = it->second;
    return true;
  }
  bool blocked(pid_t tid) const { return blocked_now.count(tid) != 0; }
};

LibraryWaits windowed() {
  LibraryWaits waits;
  waits.set_window(kWindow);
  return waits;
}

TEST(LibraryWaits, ANoteLendsWithinItsWindowWithoutReadingAClock) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, /*since_ns=*/1000, /*now_ns=*/1000, /*cpu_ns=*/5);
  const LibraryWaits::Noted* noted =
      waits.during(1000 + kWindow, 1000 + kWindow, of_package, 2, clocks);
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->stack, 10u);
  EXPECT_EQ(clocks.reads, 0);
  EXPECT_EQ(waits.during(1000, 1000, of_package, /*except=*/1, clocks), nullptr);
  EXPECT_EQ(waits.during(
                1000, 1000, [](uint64_t) { return false; }, 2, clocks),
            nullptr);
}

TEST(LibraryWaits, WithoutAWindowNothingLends) {
  LibraryWaits waits;
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, 1000, 1000, 5);
  EXPECT_TRUE(waits.empty());
  EXPECT_EQ(waits.during(1000, 1000, of_package, 2, clocks), nullptr);
}

TEST(LibraryWaits, AnOlderNoteLendsWhileItsThreadHasNotRunSince) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  clocks.now[1] = 5;
  waits.note(1, 10, kPackage, 100, 1000, 1000, 5);
  // The notes stalled (the wait engine waited for the GIL): the thread is where it was.
  const uint64_t later = 1000 + 3 * kWindow;
  const LibraryWaits::Noted* noted = waits.during(later, later, of_package, 2, clocks);
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->at_ns, later);  // as good as a note taken then
  EXPECT_EQ(clocks.reads, 1);
  EXPECT_NE(waits.during(later + kWindow, later + kWindow, of_package, 2, clocks), nullptr);
  EXPECT_EQ(clocks.reads, 1);  // fresh again: no second read
  // It ran since, and runs: it may be anywhere now.
  clocks.now[1] = 6;
  EXPECT_EQ(waits.during(later + 3 * kWindow, later + 3 * kWindow, of_package, 2, clocks), nullptr);
}

TEST(LibraryWaits, AnOlderNoteLendsWhileItsThreadRanALittleAndIsBlockedAgain) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, 1000, 1000, 5);
  // Woken to take a result (a few ns of CPU), blocked again on the next.
  clocks.now[1] = 5 + kWindow / 8;
  clocks.blocked_now.insert(1);
  const uint64_t later = 1000 + 3 * kWindow;
  const LibraryWaits::Noted* noted = waits.during(later, later, of_package, 2, clocks);
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->at_ns, later);
  EXPECT_EQ(noted->cpu_ns, 5 + kWindow / 8);  // the next run is measured from here
  // Running now, or blocked after running more than a little: it left the call.
  clocks.now[1] += kWindow / 8;
  clocks.blocked_now.clear();
  EXPECT_EQ(waits.during(later + 2 * kWindow, later + 2 * kWindow, of_package, 2, clocks), nullptr);
  clocks.now[1] += kWindow / 2;
  clocks.blocked_now.insert(1);
  EXPECT_EQ(waits.during(later + 3 * kWindow, later + 3 * kWindow, of_package, 2, clocks), nullptr);
}

TEST(LibraryWaits, TheSameLineAndPackageAtAnotherFrameIsTheSameWait) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, 900, 1000, 5);
  waits.note(1, 11, kPackage, 100, 1000, 1030, 5);
  const LibraryWaits::Noted* noted = waits.during(950, 1030, of_package, 2, clocks);
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->from_ns, 900 - kLead);
  EXPECT_EQ(noted->stack, 11u);
}

TEST(LibraryWaits, AnOlderNoteWithoutAClockOrOfAnEndedThreadLendsNothing) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  clocks.now[1] = 0;
  waits.note(1, 10, kPackage, 100, 1000, 1000, /*cpu_ns=*/0);  // its clock was not read
  waits.note(2, 11, kPackage, 100, 1000, 1000, 9);             // not in `clocks`: ended
  EXPECT_EQ(waits.during(1000 + 2 * kWindow, 1000 + 2 * kWindow, of_package, 3, clocks), nullptr);
}

TEST(LibraryWaits, ASampleDrainedAfterTheWaitEndedGoesWhereItWasTaken) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, /*since_ns=*/900, 1000, 5);
  waits.note(1, 10, kPackage, 100, 1000, 1010, 6);  // the same wait, noted again
  waits.forget(1, 1100);  // found elsewhere: it left by a window after its last note
  const uint64_t drained = 1500;
  const LibraryWaits::Noted* noted = waits.during(1040, drained, of_package, 2, clocks);
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->stack, 10u);
  EXPECT_EQ(noted->until_ns, 1010 + kWindow);
  EXPECT_EQ(waits.during(1010 + kWindow + 1, drained, of_package, 2, clocks), nullptr);
  // Taken before the wait began: up to two intervals before (the call hands out its work
  // before its thread blocks), not more.
  EXPECT_NE(waits.during(900 - kLead, drained, of_package, 2, clocks), nullptr);
  EXPECT_EQ(waits.during(900 - kLead - 1, drained, of_package, 2, clocks), nullptr);
  EXPECT_EQ(clocks.reads, 0);  // an ended wait reads no clock
}

TEST(LibraryWaits, AWaitElsewhereEndsTheEarlierOneAndBothKeepTheirSamples) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, 1000, 1000, 5);
  waits.note(1, 12, kPackage, 101, /*since_ns=*/1100, 1200, 7);
  const LibraryWaits::Noted* first = waits.during(1020, 1200, of_package, 2, clocks);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->stack, 10u);
  const LibraryWaits::Noted* second = waits.during(1150, 1200, of_package, 2, clocks);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->stack, 12u);
  // Between them (the first ended by 1040; the second began at 1100, noted up to a window
  // late), it was in neither.
  EXPECT_EQ(waits.during(1100 - kWindow - 10, 1200, of_package, 2, clocks), nullptr);
}

TEST(LibraryWaits, ACallerThatComputedBetweenCallsWaitsAnew) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, 1000, 1000, 5);
  // Back on the same line, in the same package, after computing (a loop calling the
  // library and computing in turn): a new wait, not one from 1000 to now.
  waits.note(1, 10, kPackage, 100, /*since_ns=*/1150, 1200, 5 + kWindow);
  EXPECT_EQ(waits.during(1100, 1200, of_package, 2, clocks), nullptr);  // it computed then
  const LibraryWaits::Noted* noted = waits.during(1180, 1200, of_package, 2, clocks);
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->from_ns, 1150 - kLead);
  noted = waits.during(1020, 1200, of_package, 2, clocks);
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->until_ns, 1000 + kWindow);
}

TEST(LibraryWaits, AThreadFoundGoneComputingEndsItsWait) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, 1000, 1000, 5);
  clocks.now[1] = 5 + kWindow;  // it ran: gone computing
  const uint64_t later = 1000 + 3 * kWindow;
  EXPECT_EQ(waits.during(later, later, of_package, 2, clocks), nullptr);
  EXPECT_EQ(clocks.reads, 1);
  // Ended a window after its last note: no more probes, and a sample from before that,
  // drained late, still goes to it.
  EXPECT_EQ(waits.during(later + 1, later + 1, of_package, 2, clocks), nullptr);
  EXPECT_NE(waits.during(1000 + kWindow, later + 2, of_package, 2, clocks), nullptr);
  EXPECT_EQ(clocks.reads, 1);
}

TEST(LibraryWaits, AThreadFoundRunningIsNotProbedAgainForEachOfABurstOfSamples) {
  constexpr uint64_t kWide = 64'000;  // a window whose 64th is not 0
  LibraryWaits waits;
  waits.set_window(kWide);
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, 1000, 1000, 5);
  clocks.now[1] = 6;  // woken for a moment: running, not blocked
  const uint64_t later = 1000 + 3 * kWide;
  EXPECT_EQ(waits.during(later, later, of_package, 2, clocks), nullptr);
  EXPECT_EQ(clocks.reads, 1);
  EXPECT_EQ(waits.during(later + 1, later + kWide / 64 - 1, of_package, 2, clocks), nullptr);
  EXPECT_EQ(clocks.reads, 1);
  // A moment later it is blocked again, in the same call.
  clocks.blocked_now.insert(1);
  EXPECT_NE(waits.during(later + 2, later + kWide / 64, of_package, 2, clocks), nullptr);
  EXPECT_EQ(clocks.reads, 2);
}

TEST(LibraryWaits, AThreadThatRanMoreThanALittleLeftItsWait) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, 1000, 1000, 5);
  waits.ran(1, kWindow / 4, 1010);  // a little: still there
  EXPECT_NE(waits.during(1030, 1030, of_package, 2, clocks), nullptr);
  waits.ran(1, kWindow / 4 + 1, 1020);
  EXPECT_NE(waits.during(1015, 1030, of_package, 2, clocks), nullptr);
  EXPECT_EQ(waits.during(1025, 1030, of_package, 2, clocks), nullptr);
  EXPECT_EQ(clocks.reads, 0);
}

TEST(LibraryWaits, AProbedWaitDoesNotOutrankOneNotedLater) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  clocks.now[1] = 5;
  waits.note(1, 10, kPackage, 100, 1000, 1000, 5);
  waits.note(2, 11, kPackage, 101, 1080, 1080, 7);
  // Thread 1's wait covers 1100 by a probe (it has not run); thread 2's by its note,
  // which is the later.
  const LibraryWaits::Noted* noted = waits.during(1100, 1100, of_package, 3, clocks);
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->stack, 11u);
  EXPECT_EQ(clocks.reads, 1);
}

TEST(LibraryWaits, TheLatestNoteTakesAll) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, 1000, 1000, 5);
  waits.note(2, 11, kPackage, 101, 1010, 1010, 5);
  const LibraryWaits::Noted* noted = waits.during(1020, 1020, of_package, 3, clocks);
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->stack, 11u);
  waits.forget(2, 1030);
  noted = waits.during(1020, 1030, of_package, 3, clocks);  // still in thread 2's wait
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->stack, 11u);
  noted = waits.during(1035, 1035, of_package, 3, clocks);
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->stack, 10u);
}

TEST(LibraryWaits, AnEndedWaitIsKeptOnlyAWhile) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, 1000, 1000, 5);
  waits.forget(1, 1010);
  EXPECT_FALSE(waits.empty());
  waits.forget(2, 1010 + LibraryWaits::kKeepNs + 1);
  EXPECT_TRUE(waits.empty());
  EXPECT_EQ(waits.during(1005, 1010 + LibraryWaits::kKeepNs + 1, of_package, 2, clocks), nullptr);
}

TEST(LibraryWaits, AWaitOnALineIsKnownForTheStretchItCovers) {
  LibraryWaits waits = windowed();
  Clocks clocks;
  waits.note(1, 10, kPackage, 100, /*since_ns=*/900, 1000, 5);
  // Thread 1 waited in a call on line 100 between its samples at 950 and 1005.
  EXPECT_TRUE(waits.waited_on(1, 100, 950, 1005));
  EXPECT_FALSE(waits.waited_on(1, 101, 950, 1005));  // another line's
  EXPECT_FALSE(waits.waited_on(2, 100, 950, 1005));  // another thread's
  waits.forget(1, 1100);                             // found elsewhere: over by 1040
  EXPECT_FALSE(waits.waited_on(1, 100, 1050, 1200));
  EXPECT_TRUE(waits.waited_on(1, 100, 1020, 1200));
  // The note names its thread, for a library thread's samples lent to it.
  const LibraryWaits::Noted* noted = waits.during(1000, 1100, of_package, 2, clocks);
  ASSERT_NE(noted, nullptr);
  EXPECT_EQ(noted->tid, 1);
}

}  // namespace
}  // namespace spyglass::cpython
