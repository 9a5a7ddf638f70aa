#include "core/stack_depths.hpp"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace spyglass {
namespace {

// A made-up instruction set, enough to exercise the walk: what each opcode does to the
// stack (and, for jumps, when it jumps) is in `effects`.
enum Op : uint8_t {
  kNop = 1,
  kPush = 2,
  kPop = 3,
  kCall = 4,      // pops oparg + 1, pushes 1
  kIfFalse = 5,   // absolute, pops 1 either way
  kForIter = 6,   // relative: pushes 1 going on, pops 1 jumping
  kJumpBack = 7,  // relative backwards, no fallthrough
  kReturn = 8,    // no fallthrough
  kExtArg = 9,
  kCached = 10,  // followed by two cache units
  kSetup = 11,   // relative: handler gets +3, going on 0
};

BytecodeFormat format() {
  BytecodeFormat f;
  f.flags.assign(256, 0);
  f.flags[kIfFalse] = kJumpAbsolute;
  f.flags[kForIter] = kJumpRelative;
  f.flags[kJumpBack] = kJumpRelative | kJumpBackward | kNoFallthrough;
  f.flags[kReturn] = kNoFallthrough;
  f.flags[kExtArg] = kExtendedArg;
  f.flags[kCached] = 2u << kCacheShift;
  f.flags[kSetup] = kJumpRelative;
  f.jump_unit_bytes = 2;
  return f;
}

int effect(int op, int oparg, bool jump) {
  switch (op) {
    case kPush:
      return 1;
    case kPop:
    case kIfFalse:
    case kReturn:
      return -1;
    case kCall:
      return -oparg;
    case kForIter:
      return jump ? -1 : 1;
    case kSetup:
      return jump ? 3 : 0;
    case kNop:
    case kJumpBack:
    case kExtArg:
    case kCached:
      return 0;
    default:
      return 100000;  // unknown
  }
}

std::vector<int32_t> depths_of(const std::vector<uint8_t>& code,
                               const std::vector<FlowEntry>& handlers = {}) {
  const auto ins = decode_bytecode(code.data(), code.size(), format());
  return stack_depths(ins, code.size() / 2, handlers, effect);
}

TEST(StackDepths, StraightLineCodeAddsUpEffects) {
  //                     0         1         2         3         4         5
  const auto d = depths_of({kPush, 0, kPush, 0, kPush, 0, kCall, 2, kPop, 0, kReturn, 0});
  EXPECT_EQ(d, (std::vector<int32_t>{0, 1, 2, 3, 1, 0}));
}

TEST(StackDepths, ALoopReachesItsBodyAndItsExitWithTheirOwnDepths) {
  // 0 push (iterator); 1 for_iter -> 4; 2 pop; 3 jump back to 1; 4 push; 5 return
  const auto d = depths_of({kPush, 0, kForIter, 2, kPop, 0, kJumpBack, 3, kPush, 0, kReturn, 0});
  EXPECT_EQ(d, (std::vector<int32_t>{0, 1, 2, 1, 0, 1}));
}

TEST(StackDepths, DeadCodeAndCacheUnitsStayUnknown) {
  // 0 push; 1 return; 2 push (dead); 3 cached + 2 caches (dead)
  const auto d = depths_of({kPush, 0, kReturn, 0, kPush, 0, kCached, 0, 0, 0, 0, 0});
  EXPECT_EQ(d, (std::vector<int32_t>{0, 1, -1, -1, -1, -1}));
}

TEST(StackDepths, InlineCachesAreSkippedAndCountedInRelativeJumps) {
  // 0 cached (+ caches at 1, 2); 3 push; 4 for_iter over 1 unit -> 6; 5 return; 6 return
  const auto d = depths_of({kCached, 0, 0, 0, 0, 0, kPush, 0, kForIter, 1, kReturn, 0, kReturn, 0});
  EXPECT_EQ(d, (std::vector<int32_t>{0, -1, -1, 0, 1, 2, 0}));
}

TEST(StackDepths, ExtendedArgWidensTheNextArgument) {
  std::vector<uint8_t> code(2 * 260, 0);
  // 0 push; 1 ext_arg 1; 2 if_false to byte 1*256+2*?: absolute, in units of 2 bytes
  code[0] = kPush;
  code[2] = kExtArg;
  code[3] = 1;
  code[4] = kIfFalse;
  code[5] = 2;  // oparg 258: byte 516, unit 258
  code[6] = kReturn;
  code[2 * 258] = kPush;
  code[2 * 259] = kReturn;
  const auto ins = decode_bytecode(code.data(), code.size(), format());
  ASSERT_GE(ins.size(), 3u);
  EXPECT_EQ(ins[2].oparg, 258);
  EXPECT_EQ(ins[2].target, 258);
  const auto d = stack_depths(ins, code.size() / 2, {}, effect);
  EXPECT_EQ(d[2], 1);
  EXPECT_EQ(d[3], 0);
  EXPECT_EQ(d[258], 0);
  EXPECT_EQ(d[259], 1);
}

TEST(StackDepths, HandlersAreReachedFromSetupJumpsAndFromATable) {
  // 0 setup -> 3 (+3 there); 1 push; 2 return; 3 pop (handler); 4 return
  const auto d = depths_of({kSetup, 2, kPush, 0, kReturn, 0, kPop, 0, kReturn, 0});
  EXPECT_EQ(d, (std::vector<int32_t>{0, 0, 1, 3, 2}));
  // The same handler reached only through a table entry, at the depth it states.
  const auto t = depths_of({kPush, 0, kReturn, 0, kPop, 0, kReturn, 0}, {{2, 4}});
  EXPECT_EQ(t, (std::vector<int32_t>{0, 1, 4, 3}));
}

TEST(StackDepths, AnUnknownEffectStopsTheWalkThere) {
  const auto d = depths_of({kPush, 0, 200, 0, kPush, 0, kReturn, 0});
  EXPECT_EQ(d, (std::vector<int32_t>{0, 1, -1, -1}));
}

TEST(StackDepths, JumpsOutsideTheCodeAreIgnored) {
  const auto d = depths_of({kPush, 0, kIfFalse, 200, kReturn, 0});
  EXPECT_EQ(d, (std::vector<int32_t>{0, 1, 0}));
}

TEST(StackDepths, TheStackNeverGoesBelowEmpty) {
  // A generator's prologue as 3.11 counts it: a no-effect instruction, then a pop.
  const auto d = depths_of({kNop, 0, kPop, 0, kPush, 0, kReturn, 0});
  EXPECT_EQ(d, (std::vector<int32_t>{0, 0, 0, 1}));
}

TEST(StackDepths, EmptyCodeHasNoDepths) { EXPECT_TRUE(depths_of({}).empty()); }

}  // namespace
}  // namespace spyglass
