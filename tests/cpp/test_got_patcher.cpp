#include "platform/got_patcher.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

namespace spyglass::platform {
namespace {

pid_t fake_getppid() { return 424242; }

// getppid is called by this test executable through its own offset table; nothing else in
// the process depends on its result.
TEST(GotPatcher, RedirectsCallsAndRestoresThem) {
  const pid_t real = getppid();
  ASSERT_NE(real, 424242);
  int anchor = 0;  // no object holds the stack: nothing is skipped as "self"
  GotPatcher patcher({{"getppid", reinterpret_cast<void*>(&fake_getppid)}}, &anchor);
  EXPECT_EQ(patcher.patch_new_objects(), 0u);  // not active yet
  patcher.set_active(true);
  EXPECT_GE(patcher.patch_new_objects(), 1u);
  EXPECT_EQ(getppid(), 424242);
  EXPECT_EQ(patcher.patch_new_objects(), 0u);  // objects already patched are left alone
  EXPECT_FALSE(patcher.objects_changed());
  patcher.restore();
  EXPECT_EQ(getppid(), real);
  EXPECT_EQ(patcher.patch_new_objects(), 0u);  // restore() stops patching too
  EXPECT_EQ(getppid(), real);
}

pid_t other_getppid() { return 7; }

TEST(GotPatcher, EntriesBoundToAnotherDefinitionAreLeftAlone) {
  const pid_t real = getppid();  // binds the entry, if lazily bound, to the real getppid
  int anchor = 0;
  GotPatcher patcher({{"getppid", reinterpret_cast<void*>(&fake_getppid),
                       reinterpret_cast<void*>(&other_getppid)}},
                     &anchor);
  patcher.set_active(true);
  patcher.patch_new_objects();
  EXPECT_EQ(getppid(), real);
  patcher.restore();
}

TEST(GotPatcher, TheObjectHoldingTheReplacementsIsNotPatched) {
  const pid_t real = getppid();
  // "self" is this executable, which is where the only call site is.
  GotPatcher patcher({{"getppid", reinterpret_cast<void*>(&fake_getppid)}},
                     reinterpret_cast<const void*>(&fake_getppid));
  patcher.set_active(true);
  patcher.patch_new_objects();
  EXPECT_EQ(getppid(), real);
  patcher.restore();
}

TEST(GotPatcher, TheLibraryDefiningTheEntryPointsIsNotPatched) {
  const pid_t real = getppid();
  int anchor = 0;
  // "target" is this executable: its own calls to what it defines stay its own.
  GotPatcher patcher({{"getppid", reinterpret_cast<void*>(&fake_getppid)}}, &anchor,
                     reinterpret_cast<const void*>(&fake_getppid));
  patcher.set_active(true);
  patcher.patch_new_objects();
  EXPECT_EQ(getppid(), real);
  patcher.restore();
}

}  // namespace
}  // namespace spyglass::platform
