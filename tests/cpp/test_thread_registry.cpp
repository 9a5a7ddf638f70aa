#include "core/thread_registry.hpp"

#include <gtest/gtest.h>

#include <set>
#include <unordered_set>

#include "core/thread_slots.hpp"

namespace spyglass {
namespace {

TEST(ThreadRegistry, EachThreadGetsAFreeSlotOfItsOwn) {
  ThreadRegistry registry;
  std::set<uint32_t> slots;
  for (pid_t tid = 100; tid < 110; ++tid) {
    ProfiledThread* t = registry.add(tid);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->tid, tid);
    EXPECT_NE(t->slot, 0u);  // slot 0 is never handed out: cookie 0 means "none"
    EXPECT_EQ(thread_slot_table()[t->slot].tid, tid);
    EXPECT_TRUE(slots.insert(t->slot).second);
    EXPECT_EQ(registry.find(tid), t);
  }
  EXPECT_EQ(registry.all().size(), 10u);
  registry.clear();
  for (uint32_t slot : slots) EXPECT_EQ(thread_slot_table()[slot].tid, 0);
  EXPECT_EQ(registry.find(100), nullptr);
}

TEST(ThreadRegistry, AReusedSlotTellsItsOldSignalsApart) {
  ThreadRegistry registry;
  const uint32_t slot = registry.add(200)->slot;
  const uint32_t first = make_cookie(thread_slot_table()[slot].generation, slot);
  registry.remove(200);
  EXPECT_EQ(thread_slot_table()[slot].tid, 0);
  ProfiledThread* again = registry.add(201);
  ASSERT_EQ(again->slot, slot);  // the lowest free slot
  const uint32_t second = make_cookie(thread_slot_table()[slot].generation, slot);
  EXPECT_NE(first, second);
  EXPECT_EQ(cookie_index(first), cookie_index(second));
  registry.clear();
}

TEST(ThreadRegistry, GenerationsWrapBeforeTheCookieTurnsNegative) {
  ThreadRegistry registry;
  const uint32_t slot = registry.add(300)->slot;
  registry.remove(300);
  const uint32_t largest = (1u << (32 - kSlotIndexBits - 1)) - 1;
  thread_slot_table()[slot].generation = largest;
  registry.add(301);
  const uint32_t generation = thread_slot_table()[slot].generation;
  EXPECT_GE(generation, 1u);  // never 0: a cookie of 0 means "none"
  EXPECT_LT(generation, largest);
  EXPECT_GT(static_cast<int>(make_cookie(generation, slot)), 0);
  registry.clear();
}

TEST(ThreadRegistry, NoSlotLeftMeansTheThreadGoesUnfollowed) {
  ThreadRegistry registry;
  pid_t tid = 1000;
  while (registry.add(tid) != nullptr) ++tid;
  EXPECT_EQ(registry.all().size(), kMaxThreadSlots - 1);
  EXPECT_EQ(registry.find(tid), nullptr);
  registry.remove(1000);
  EXPECT_NE(registry.add(tid), nullptr);  // a slot given back is taken again
  registry.clear();
}

TEST(ThreadRegistry, GoneAndEndedThreadsAreToldFromLiveOnes) {
  ThreadRegistry registry;
  registry.add(1);
  registry.add(2);
  registry.add(3);
  const std::unordered_set<pid_t> alive{1, 3, 4};
  EXPECT_EQ(registry.gone(alive), std::vector<pid_t>{2});

  registry.mark_ended(3);
  registry.mark_ended(5);
  EXPECT_TRUE(registry.has_ended(3));
  registry.forget_ended_except(alive);  // the kernel no longer lists 5: forgotten
  EXPECT_TRUE(registry.has_ended(3));
  EXPECT_FALSE(registry.has_ended(5));
  registry.clear();
  EXPECT_FALSE(registry.has_ended(3));
}

}  // namespace
}  // namespace spyglass
