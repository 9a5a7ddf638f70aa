// The CFI compiler against hand-made call frame information, and the unwinder against this
// test binary's own functions: unwinding from a known point must give the return addresses
// the compiler itself reports (__builtin_return_address).
#include <gtest/gtest.h>
#include <ucontext.h>

#include <vector>

#include "../../src/native/platform/unwind_tables.hpp"

using spyglass::platform::CfaRule;
using spyglass::platform::CfiProgram;
using spyglass::platform::CfiRow;
using spyglass::platform::compile_cfi;
using spyglass::platform::UnwindTables;

namespace {

// What a compiler emits for every x86-64 function: CFA = rsp + 8, return address at CFA - 8.
const uint8_t kCie[] = {0x0c, 7, 8, 0x90, 1};

CfiProgram program(const uint8_t* fde, size_t size) {
  CfiProgram p;
  p.pc_begin = 0x1000;
  p.pc_end = 0x1014;
  p.cie_instructions = kCie;
  p.cie_size = sizeof kCie;
  p.fde_instructions = fde;
  p.fde_size = size;
  return p;
}

}  // namespace

TEST(CfiCompiler, FramePointerPrologueAndEpilogue) {
  // push rbp; mov rbp, rsp; ...; leave; ret
  const uint8_t fde[] = {
      0x41, 0x0e, 16,    // at +1: CFA = rsp + 16
      0x86, 2,           //        rbp saved at CFA - 16
      0x43, 0x0d, 6,     // at +4: CFA = rbp + 16
      0x4a, 0x0c, 7,  8  // at +14: CFA = rsp + 8
  };
  std::vector<CfiRow> rows;
  ASSERT_TRUE(compile_cfi(program(fde, sizeof fde), &rows));
  const std::vector<CfiRow> want = {
      {0x1000, 8, 0, CfaRule::kSp},      {0x1001, 16, -16, CfaRule::kSp},
      {0x1004, 16, -16, CfaRule::kFp},   {0x100e, 8, -16, CfaRule::kSp},
      {0x1014, 0, 0, CfaRule::kUnknown},
  };
  EXPECT_EQ(rows, want);
}

TEST(CfiCompiler, RememberedStateComesBack) {
  const uint8_t fde[] = {
      0x41, 0x0e, 32,  // at +1: CFA = rsp + 32
      0x0a,            // remember
      0x42, 0x0e, 8,   // at +3: CFA = rsp + 8 (an early return)
      0x41, 0x0b,      // at +4: restore: CFA = rsp + 32 again
  };
  std::vector<CfiRow> rows;
  ASSERT_TRUE(compile_cfi(program(fde, sizeof fde), &rows));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[1].cfa_offset, 32);
  EXPECT_EQ(rows[2].cfa_offset, 8);
  EXPECT_EQ(rows[3], (CfiRow{0x1004, 32, 0, CfaRule::kSp}));
}

TEST(CfiCompiler, ExpressionsAreUnknownRows) {
  // PLT-style: CFA given by a DWARF expression from +4 on.
  const uint8_t fde[] = {0x44, 0x0f, 3, 0x77, 0x08, 0x06};
  std::vector<CfiRow> rows;
  ASSERT_TRUE(compile_cfi(program(fde, sizeof fde), &rows));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].rule, CfaRule::kSp);
  EXPECT_EQ(rows[1].rule, CfaRule::kUnknown);
  EXPECT_EQ(rows[1].begin, 0x1004u);
}

TEST(CfiCompiler, ReturnAddressInARegisterIsUnknown) {
  const uint8_t fde[] = {0x42, 0x09, 16, 3};  // at +2: the return address is in rbx
  std::vector<CfiRow> rows;
  ASSERT_TRUE(compile_cfi(program(fde, sizeof fde), &rows));
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[1].rule, CfaRule::kUnknown);
}

TEST(CfiCompiler, UnreadableInstructionAddsNothing) {
  const uint8_t fde[] = {0x41, 0x3f};  // not a DWARF CFA opcode
  std::vector<CfiRow> rows;
  EXPECT_FALSE(compile_cfi(program(fde, sizeof fde), &rows));
  EXPECT_TRUE(rows.empty());
}

#if defined(__x86_64__)

namespace {

struct Chain {
  uintptr_t expected[3] = {};
  uintptr_t got[16] = {};
  size_t depth = 0;
  bool lost = false;
};

const UnwindTables* g_tables = nullptr;

__attribute__((noinline)) void innermost(Chain* c) {
  c->expected[0] = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  ucontext_t uc;
  getcontext(&uc);
  const auto pc = static_cast<uintptr_t>(uc.uc_mcontext.gregs[REG_RIP]);
  const auto sp = static_cast<uintptr_t>(uc.uc_mcontext.gregs[REG_RSP]);
  const auto fp = static_cast<uintptr_t>(uc.uc_mcontext.gregs[REG_RBP]);
  c->depth = g_tables->unwind(pc, sp, fp, c->got, 16, &c->lost);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void middle(Chain* c) {
  c->expected[1] = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  innermost(c);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void outer(Chain* c) {
  c->expected[2] = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  middle(c);
  asm volatile("" ::: "memory");
}

}  // namespace

TEST(Unwinder, OwnFunctionsMatchTheCompilersReturnAddresses) {
  const auto tables = UnwindTables::build(nullptr, 0, 0);
  ASSERT_GT(tables->objects(), 0u);
  g_tables = tables.get();
  Chain c;
  outer(&c);
  ASSERT_GE(c.depth, 3u);
  EXPECT_EQ(c.got[0], c.expected[0]);  // into middle
  EXPECT_EQ(c.got[1], c.expected[1]);  // into outer
  EXPECT_EQ(c.got[2], c.expected[2]);  // into this test
}

TEST(Unwinder, StopsAtTheStopFunction) {
  // With `middle` as the stop function, innermost's caller is found to be in it and the
  // chain ends there, empty, and not for want of a rule.
  const auto all = UnwindTables::build(nullptr, 0, 0);
  g_tables = all.get();
  Chain first;
  outer(&first);
  const auto begin = reinterpret_cast<uintptr_t>(&middle);
  ASSERT_GT(first.expected[0], begin);
  const auto stopping = UnwindTables::build(all.get(), begin, first.expected[0]);
  g_tables = stopping.get();
  Chain c;
  outer(&c);
  EXPECT_EQ(c.depth, 0u);
  EXPECT_FALSE(c.lost);
}

TEST(Unwinder, AddressInNoTableStops) {
  const auto tables = UnwindTables::build(nullptr, 0, 0);
  uintptr_t out[4];
  bool lost = false;
  EXPECT_EQ(tables->unwind(0x10, 0x1000, 0, out, 4, &lost), 0u);
  EXPECT_TRUE(lost);
}

#endif
