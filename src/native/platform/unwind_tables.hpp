// Native return addresses for a signal handler, without frame pointers. Off the hot path
// (the collector's upkeep thread, when the loaded objects change), each object's `.eh_frame` call
// frame information is compiled into a sorted table of rows: from this address on, the caller's
// stack pointer (the CFA) is this register plus this offset, the return address sits just
// below it and the saved frame pointer, if any, at a fixed offset from it. The handler then
// only binary-searches and reads the stack. A rule the table cannot say in that form (a
// DWARF expression, a return address kept in a register), or an address in no table, ends
// the chain where it got to; except that interrupted code with no rule at all in an object
// that has rules (hand-written assembly, like BLAS kernels) has its return address found by
// scanning the stack above it for a value that points just past a call instruction. x86-64 only:
// elsewhere tables are empty and no caller is found.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "page_allocator.hpp"

namespace spyglass::platform {

enum class CfaRule : uint8_t {
  kUnknown = 0,  // not expressible as register + offset: stop here
  kNoInfo,       // no function's information covers it (the gap after a function): stop here
  kSp,           // CFA = stack pointer + offset
  kFp,           // CFA = frame pointer + offset
};

// From `begin` (an absolute address) up to the next row's begin.
struct CfiRow {
  uintptr_t begin = 0;
  int32_t cfa_offset = 0;
  int16_t fp_offset = 0;  // the saved frame pointer at CFA + this; 0: the register is unchanged
  CfaRule rule = CfaRule::kUnknown;
  bool operator==(const CfiRow&) const = default;
};

// Rows in pages of their own (page_allocator.hpp): a large library's run to megabytes.
using CfiRows = std::vector<CfiRow, PageAllocator<CfiRow>>;

// One function's unwind description, as `.eh_frame` gives it (for the compiler's users and
// its tests: a hand-made CIE and FDE go through the same interpreter as a loaded object's).
struct CfiProgram {
  uintptr_t pc_begin = 0;
  uintptr_t pc_end = 0;
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t return_register = 16;
  const uint8_t* cie_instructions = nullptr;
  size_t cie_size = 0;
  const uint8_t* fde_instructions = nullptr;
  size_t fde_size = 0;
};

// Appends the rows of one function (the last one a kNoInfo row at pc_end, so a gap to the
// next function is unknown). False, with nothing appended, for an instruction it cannot read.
bool compile_cfi(const CfiProgram& program, CfiRows* rows);

// Every row of an object loaded in this process, from its `.eh_frame_hdr` (the
// PT_GNU_EH_FRAME segment at `eh_frame_hdr`); sorted, duplicates of a begin keep the last.
// Empty, part done, once `*cancel` is set (checked every few hundred functions: the
// interpreter's own table alone takes milliseconds, which a run that is ending should not
// wait for).
CfiRows compile_loaded_eh_frame(const uint8_t* eh_frame_hdr,
                                const std::atomic<bool>* cancel = nullptr);

// What unwind() is told of where the interrupted thread's chain of callers ends: on a
// thread that runs no Python, anywhere (its start); on one that does, at its innermost eval
// loop, given as an address inside that loop's C frame (the stop function appears once per
// nested eval loop, and a chain read from stale words often ends at an outer one). Where
// that address is not known, a leaf without rules is not scanned.
inline constexpr uintptr_t kNoEvalLoop = 0;
inline constexpr uintptr_t kEvalLoopUnknown = 1;

// One loaded object's rows, for the life of the process once published.
struct ObjectCfi {
  uintptr_t load_base = 0;
  std::string name;
  uintptr_t begin = 0;  // its rows' span: [first row, last row]
  uintptr_t end = 0;
  CfiRows rows;
};

// A snapshot of every loaded object's rows. Immutable once built; the builder keeps it (and
// every object in it) alive while a handler may be reading it.
class UnwindTables {
 public:
  // `stop_begin`..`stop_end`: a function where unwinding ends (the interpreter's eval loop).
  // Objects already compiled in `previous` (and still loaded) are shared, not compiled
  // again. With `wanted`, only the objects holding one of those addresses are compiled
  // anew (compiling every loaded object's table costs tens of milliseconds with NumPy
  // loaded: it is done for the objects samples are found in); `*compiled` counts them.
  // Null once `*cancel` is set during the build.
  static std::unique_ptr<UnwindTables> build(const UnwindTables* previous, uintptr_t stop_begin,
                                             uintptr_t stop_end,
                                             const std::vector<uintptr_t>* wanted = nullptr,
                                             size_t* compiled = nullptr,
                                             const std::atomic<bool>* cancel = nullptr);

  // The row for `pc`, or null. Async-signal-safe.
  const CfiRow* find(uintptr_t pc) const;
  // The compiled object whose rows span `pc`, or null. Async-signal-safe.
  const ObjectCfi* object_at(uintptr_t pc) const;
  bool is_stop(uintptr_t pc) const { return pc >= stop_begin_ && pc < stop_end_; }
  size_t objects() const { return objects_.size(); }
  // Whether every loaded object was compiled (or found to have no table).
  bool complete() const { return complete_; }
  // Whether a scan of a leaf without rules found chains into objects with no table yet:
  // which object a true chain goes through is not known, so every object is wanted.
  bool wants_every_object() const { return wants_every_.load(std::memory_order_relaxed); }

  // Fills `out` with the return addresses of the callers of the code at `pc` (interrupted
  // with stack pointer `sp` and frame pointer `fp`), innermost first, up to the stop
  // function (not included) or the first frame it cannot unwind. Reads the stack only
  // between `sp` and `sp + max_stack`; the caller guards against faults. Returns the count
  // and sets `*lost` when it stopped short of the stop function for want of a rule or a
  // table (`*stopped_at`, if given, gets the address it found none for). Async-signal-safe.
  size_t unwind(uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t* out, size_t max, bool* lost,
                uintptr_t* stopped_at = nullptr, uintptr_t eval_bound = kNoEvalLoop) const;

 private:
  enum class ChainEnd : uint8_t {
    kStop,       // at the stop function
    kOutermost,  // at a thread's first frame
    kFull,       // `max` callers found
    kNoRule,     // at an address with no rule (`at`)
    kMisread,    // at a rule that reads the stack out of bounds (`at`)
  };
  struct Walked {
    ChainEnd end = ChainEnd::kNoRule;
    uintptr_t at = 0;
    uintptr_t sp = 0;  // the stack pointer of the last frame reached
  };
  // The callers by the rules alone, from the code at `lookup`.
  size_t walk(uintptr_t lookup, uintptr_t sp, uintptr_t fp, uintptr_t limit, uintptr_t* out,
              size_t max, Walked* walked) const;
  // The callers of interrupted code that has no rule: of the words above `sp` that read as
  // a return address, the one whose chain ends as a true one does and highest, and its chain.
  // Whether a candidate's chain ends where the true one must (see kNoEvalLoop).
  static bool ends_as_a_true_chain(const Walked& walked, uintptr_t eval_bound);
  // `leaf` names the code without rules (the start of its span in the table).
  size_t scan_leaf(uintptr_t leaf, uintptr_t sp, uintptr_t fp, uintptr_t limit, uintptr_t* out,
                   size_t max, uintptr_t eval_bound, Walked* walked) const;
  // The chain from the first of the `words` words from `sp` on equal to `ra` whose chain
  // ends as a true one.
  size_t rescan_leaf(uintptr_t ra, uintptr_t sp, size_t words, uintptr_t fp, uintptr_t limit,
                     uintptr_t* out, size_t max, uintptr_t eval_bound, Walked* walked) const;
  // The row whose span holds `pc`, rule or no rule.
  const CfiRow* row_at(uintptr_t pc) const;

  // The return address a scan last found for a leaf, written by signal handlers: a reader
  // may see a leaf with another leaf's address, which its chain then fails to confirm.
  struct RememberedReturn {
    std::atomic<uintptr_t> leaf{0};
    std::atomic<uintptr_t> ra{0};
  };
  static constexpr size_t kRemembered = 64;
  mutable RememberedReturn remembered_[kRemembered];
  mutable std::atomic<bool> wants_every_{false};
  // Whether `ra` follows a call instruction that may have called code without rules.
  bool could_have_called_a_function_without_rules(uintptr_t ra) const;

  std::vector<std::shared_ptr<const ObjectCfi>> objects_;  // sorted by begin
  // Objects looked at and found with no table (base, name): not looked at again.
  std::vector<std::pair<uintptr_t, std::string>> without_;
  uintptr_t stop_begin_ = 0;
  uintptr_t stop_end_ = 0;
  bool complete_ = false;  // every loaded object was compiled (or has no table)
  // Every address a return address can be: (lowest_, highest_], the objects and the stop.
  uintptr_t lowest_ = 0;
  uintptr_t highest_ = 0;
};

// The interrupted thread's stack and frame pointers (0 where the machine is not x86-64).
void interrupted_sp_fp(const void* ucontext, uintptr_t* sp, uintptr_t* fp);

}  // namespace spyglass::platform
