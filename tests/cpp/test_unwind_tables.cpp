// The CFI compiler against hand-made call frame information, and the unwinder against this
// test binary's own functions: unwinding from a known point must give the return addresses
// the compiler itself reports (__builtin_return_address).
#include <gtest/gtest.h>
#include <link.h>
#include <malloc.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <exception>
#include <vector>

#include "../../src/native/platform/unwind_tables.hpp"

using spyglass::platform::CfaRule;
using spyglass::platform::CfiProgram;
using spyglass::platform::CfiRow;
using spyglass::platform::CfiRows;
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
  CfiRows rows;
  ASSERT_TRUE(compile_cfi(program(fde, sizeof fde), &rows));
  const CfiRows want = {
      {0x1000, 8, 0, CfaRule::kSp},     {0x1001, 16, -16, CfaRule::kSp},
      {0x1004, 16, -16, CfaRule::kFp},  {0x100e, 8, -16, CfaRule::kSp},
      {0x1014, 0, 0, CfaRule::kNoInfo},
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
  CfiRows rows;
  ASSERT_TRUE(compile_cfi(program(fde, sizeof fde), &rows));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[1].cfa_offset, 32);
  EXPECT_EQ(rows[2].cfa_offset, 8);
  EXPECT_EQ(rows[3], (CfiRow{0x1004, 32, 0, CfaRule::kSp}));
}

TEST(CfiCompiler, ExpressionsAreUnknownRows) {
  // PLT-style: CFA given by a DWARF expression from +4 on.
  const uint8_t fde[] = {0x44, 0x0f, 3, 0x77, 0x08, 0x06};
  CfiRows rows;
  ASSERT_TRUE(compile_cfi(program(fde, sizeof fde), &rows));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].rule, CfaRule::kSp);
  EXPECT_EQ(rows[1].rule, CfaRule::kUnknown);
  EXPECT_EQ(rows[1].begin, 0x1004u);
}

TEST(CfiCompiler, ReturnAddressInARegisterIsUnknown) {
  const uint8_t fde[] = {0x42, 0x09, 16, 3};  // at +2: the return address is in rbx
  CfiRows rows;
  ASSERT_TRUE(compile_cfi(program(fde, sizeof fde), &rows));
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[1].rule, CfaRule::kUnknown);
}

TEST(CfiCompiler, UnreadableInstructionAddsNothing) {
  const uint8_t fde[] = {0x41, 0x3f};  // not a DWARF CFA opcode
  CfiRows rows;
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

TEST(Unwinder, ABuildCancelledAsTheRunEndsPublishesNothing) {
  // Set before the build: the first object's table is cut short and nothing is returned
  // (a cut table would read as "this object has no unwind information").
  const std::atomic<bool> cancelled{true};
  EXPECT_EQ(UnwindTables::build(nullptr, 0, 0, nullptr, nullptr, &cancelled), nullptr);
  const std::atomic<bool> going_on{false};
  const auto built = UnwindTables::build(nullptr, 0, 0, nullptr, nullptr, &going_on);
  ASSERT_NE(built, nullptr);
  EXPECT_GT(built->objects(), 0u);
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

// A function with no call frame information, as hand-written assembly (a BLAS kernel)
// has none, in this object's code among functions that have it. Like an interrupted leaf,
// it keeps a word and 64 bytes of locals above its stack pointer (a stale return address
// among them), then hands its own pc, sp and fp to `report`, which unwinds from there.
extern "C" {
uintptr_t spyglass_test_stale = 0;    // put among the leaf's locals
uintptr_t spyglass_test_leaf_ra = 0;  // the leaf's own return address
void spyglass_test_leaf_without_rules(void (*report)(uintptr_t, uintptr_t, uintptr_t));
}
asm(R"(
  .text
  .globl spyglass_test_leaf_without_rules
  .type spyglass_test_leaf_without_rules, @function
spyglass_test_leaf_without_rules:
  movq (%rsp), %rax
  movq %rax, spyglass_test_leaf_ra(%rip)
  movq %rdi, %rax
  pushq $0x1234
  subq $64, %rsp
  movq spyglass_test_stale(%rip), %r10
  movq %r10, 8(%rsp)
  leaq 1f(%rip), %rdi
  movq %rsp, %rsi
  movq %rbp, %rdx
  call *%rax
1:
  addq $72, %rsp
  ret
  .size spyglass_test_leaf_without_rules, .-spyglass_test_leaf_without_rules
)");

namespace {

struct LeafChain {
  const UnwindTables* tables = nullptr;  // else built for the call
  uintptr_t eval_bound = spyglass::platform::kNoEvalLoop;
  uintptr_t stop_begin = 0;
  uintptr_t into_outer = 0;
  bool leaf_has_rules = true;
  bool leaf_in_object = false;
  uintptr_t out[8] = {};
  size_t depth = 0;
  bool lost = false;
};
LeafChain g_leaf;

void unwind_from_leaf(uintptr_t pc, uintptr_t sp, uintptr_t fp) {
  // The outer caller is the stop function, as the eval loop is for a sample.
  std::unique_ptr<UnwindTables> built;
  const UnwindTables* tables = g_leaf.tables;
  if (tables == nullptr) {
    built = UnwindTables::build(nullptr, g_leaf.stop_begin, g_leaf.into_outer + 1);
    tables = built.get();
  }
  g_leaf.leaf_has_rules = tables->find(pc) != nullptr;
  g_leaf.leaf_in_object = tables->object_at(pc) != nullptr;
  g_leaf.depth =
      tables->unwind(pc, sp, fp, g_leaf.out, 8, &g_leaf.lost, nullptr, g_leaf.eval_bound);
}

__attribute__((noinline)) uintptr_t return_address_of_this_call() {
  return reinterpret_cast<uintptr_t>(__builtin_return_address(0));
}

__attribute__((noinline)) void call_leaf_inner() {
  g_leaf.into_outer = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  spyglass_test_leaf_without_rules(&unwind_from_leaf);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void call_leaf_outer() {
  // Stack above the leaf with no return address in it, however near the stack's top the
  // test runs: the scan reads as far as a BLAS kernel's buffer reaches, or the top.
  volatile char room[80 * 1024];
  for (size_t i = 0; i < sizeof room; ++i) room[i] = 0;
  call_leaf_inner();
  asm volatile("" ::: "memory");
}

}  // namespace

TEST(Unwinder, LeafWithoutRulesFindsItsReturnAddressAboveIt) {
  // Left by an earlier call to a function that has rules: not the leaf's return address,
  // though it points just past a call.
  spyglass_test_stale = return_address_of_this_call();
  g_leaf = LeafChain{};
  g_leaf.stop_begin = reinterpret_cast<uintptr_t>(&call_leaf_outer);
  call_leaf_outer();
  ASSERT_FALSE(g_leaf.leaf_has_rules);
  ASSERT_TRUE(g_leaf.leaf_in_object);
  ASSERT_EQ(g_leaf.depth, 1u);  // the inner caller, then the stop function
  EXPECT_EQ(g_leaf.out[0], spyglass_test_leaf_ra);
  EXPECT_FALSE(g_leaf.lost);
  // The same tables twice: the second time starts from the return address the first found.
  const auto tables = UnwindTables::build(nullptr, g_leaf.stop_begin, g_leaf.into_outer + 1);
  for (int round = 0; round < 2; ++round) {
    g_leaf.tables = tables.get();
    g_leaf.depth = 0;
    g_leaf.out[0] = 0;
    call_leaf_outer();
    EXPECT_EQ(g_leaf.depth, 1u) << round;
    EXPECT_EQ(g_leaf.out[0], spyglass_test_leaf_ra) << round;
  }
  g_leaf.tables = nullptr;
}

TEST(Unwinder, LeafScanEndsAtTheInnermostEvalLoop) {
  // The outer caller stands for the eval loop. A chain ending there is taken when the eval
  // loop's C frame is above it, and not when it is below (the chain then ends at an outer
  // eval loop); nor is the leaf scanned when where the eval loop runs is unknown.
  g_leaf = LeafChain{};
  g_leaf.stop_begin = reinterpret_cast<uintptr_t>(&call_leaf_outer);
  call_leaf_outer();  // learns the return address into the outer caller
  for (const auto& [bound, found] : {std::pair{~uintptr_t{0}, 1u}, std::pair{uintptr_t{2}, 0u},
                                     std::pair{spyglass::platform::kEvalLoopUnknown, 0u}}) {
    g_leaf.tables = nullptr;
    g_leaf.eval_bound = bound;
    g_leaf.depth = 99;
    call_leaf_outer();
    EXPECT_EQ(g_leaf.depth, found) << bound;
  }
  g_leaf.eval_bound = spyglass::platform::kNoEvalLoop;
}

TEST(Unwinder, LeafWithoutRulesAndNoReturnAddressStops) {
  const auto tables = UnwindTables::build(nullptr, 0, 0);
  const auto leaf = reinterpret_cast<uintptr_t>(&spyglass_test_leaf_without_rules) + 1;
  // More words than the scan reads, none a return address but one left by an earlier call
  // to a function with rules.
  std::vector<uintptr_t> stack(10000, 0);
  for (size_t i = 0; i < stack.size(); ++i) stack[i] = 0x1000 + i;
  stack[7] = return_address_of_this_call();
  uintptr_t out[4] = {};
  bool lost = false;
  EXPECT_EQ(tables->unwind(leaf, reinterpret_cast<uintptr_t>(stack.data()), 0, out, 4, &lost), 0u);
  EXPECT_TRUE(lost);
}

TEST(Unwinder, LeafScanStopsAtThePageItCannotRead) {
  // A stack whose top is followed by a guard page, as another thread's stack may be: the
  // scan must stop at it (in a sample, a fault is fatal once faulthandler's handler comes
  // first; here, it would end the test program).
  const auto tables = UnwindTables::build(nullptr, 0, 0);
  const auto leaf = reinterpret_cast<uintptr_t>(&spyglass_test_leaf_without_rules) + 1;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* region =
      mmap(nullptr, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(region, MAP_FAILED);
  auto* bytes = static_cast<char*>(region);
  ASSERT_EQ(mprotect(bytes + 2 * page, page, PROT_NONE), 0);
  auto* words = reinterpret_cast<uintptr_t*>(bytes + page / 2);
  const size_t count = (2 * page - page / 2) / sizeof(uintptr_t);
  for (size_t i = 0; i < count; ++i) words[i] = 0x1000 + i;
  uintptr_t out[4] = {};
  bool lost = false;
  EXPECT_EQ(tables->unwind(leaf, reinterpret_cast<uintptr_t>(words), 0, out, 4, &lost), 0u);
  EXPECT_TRUE(lost);
  munmap(region, 3 * page);
}

TEST(Unwinder, AddressInNoTableStops) {
  const auto tables = UnwindTables::build(nullptr, 0, 0);
  uintptr_t out[4];
  bool lost = false;
  EXPECT_EQ(tables->unwind(0x10, 0x1000, 0, out, 4, &lost), 0u);
  EXPECT_TRUE(lost);
}

#endif

namespace {

// The PT_GNU_EH_FRAME segment of the object holding `address`, in memory.
const uint8_t* eh_frame_hdr_of(const void* address) {
  struct Find {
    uintptr_t address;
    const uint8_t* hdr = nullptr;
  } find{reinterpret_cast<uintptr_t>(address)};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t /*size*/, void* data) {
        auto* f = static_cast<Find*>(data);
        const ElfW(Phdr)* eh = nullptr;
        bool holds = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_GNU_EH_FRAME) eh = &ph;
          const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
          holds = holds ||
                  (ph.p_type == PT_LOAD && f->address >= begin && f->address < begin + ph.p_memsz);
        }
        if (!holds || eh == nullptr) return 0;
        f->hdr = reinterpret_cast<const uint8_t*>(info->dlpi_addr + eh->p_vaddr);
        return 1;
      },
      &find);
  return find.hdr;
}

}  // namespace

// A large library's rows run to megabytes. Grown in the C allocator's heap, they stayed in
// it once freed (glibc raises its mmap threshold after a large free) and changed the
// program's heap layout: pyarrow's left a pandas read 47 MB more resident.
TEST(CfiCompiler, ALoadedObjectsRowsAreNotInTheProgramsHeap) {
  const uint8_t* hdr = eh_frame_hdr_of(reinterpret_cast<const void*>(&std::terminate));
  ASSERT_NE(hdr, nullptr);  // libstdc++'s: thousands of functions
  const struct mallinfo2 before = mallinfo2();
  const CfiRows rows = spyglass::platform::compile_loaded_eh_frame(hdr);
  const struct mallinfo2 after = mallinfo2();
  const size_t bytes = rows.size() * sizeof(CfiRow);
  ASSERT_GT(bytes, size_t{64} << 10);
  const size_t heap_before = before.uordblks + before.hblkhd;
  const size_t heap_after = after.uordblks + after.hblkhd;
  EXPECT_LT(heap_after, heap_before + bytes / 8) << bytes << " bytes of rows";
}
