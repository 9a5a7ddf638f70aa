#include "../unwind_tables.hpp"

#include <link.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace spyglass::platform {

// The scan reads every word above a leaf, and chains from stale return addresses read
// wherever their rules point: stack words AddressSanitizer holds as other frames' redzones.
#define SPYGLASS_READS_ANY_STACK_WORD __attribute__((no_sanitize("address")))

namespace {

// Frames larger than this, or a caller's stack pointer this far above the interrupted one,
// are taken for a misread rule rather than for a real stack.
constexpr uintptr_t kMaxStackSpan = uintptr_t{64} << 20;

// How far above the interrupted stack pointer a leaf without call frame information is
// searched for its return address: the registers it pushed and its locals. OpenBLAS's
// Haswell dgemm kernel keeps a 28 KiB page-aligned buffer on the stack, below its return
// address. Most words read are data, which the object span check turns away in two
// comparisons.
constexpr size_t kMaxScanWords = 8192;
// At most this many candidates are followed, each at most this far.
constexpr size_t kMaxScanCandidates = 8192;
constexpr size_t kMaxScanChain = 64;

// How many words from `from` on (up to `max_words`) can be read without a fault, asked of
// the kernel: the scan must not run off the top of a thread's stack into an unmapped page
// or another thread's guard page. The fault guard would catch that, but only while its
// handler is the first in line, and faulthandler (which pytest turns on) takes that place
// and makes any fault fatal. process_vm_readv on this process reads a word of each page
// and stops at the first page that cannot be read. 0 where the call is refused (a seccomp
// filter): then there is no scan.
size_t readable_words(uintptr_t from, size_t max_words) {
  static uint8_t sink[8 * 17];  // written by the kernel, never read: threads may share it
  constexpr uintptr_t kPage = 4096;
  constexpr size_t kMaxPages = 17;  // 64 KiB from anywhere in a page
  iovec local[kMaxPages];
  iovec remote[kMaxPages];
  const uintptr_t end = from + max_words * sizeof(uintptr_t);
  // A word from each page: pages are readable whole or not at all.
  size_t pages = 0;
  for (uintptr_t at = from; at < end && pages < kMaxPages; at = (at & ~(kPage - 1)) + kPage) {
    remote[pages] = iovec{reinterpret_cast<void*>(at), 8};
    local[pages] = iovec{sink + 8 * pages, 8};
    ++pages;
  }
  const ssize_t got = process_vm_readv(getpid(), local, pages, remote, pages, 0);
  if (got <= 0) return 0;
  const size_t readable_pages = static_cast<size_t>(got) / 8;
  if (readable_pages == pages) return max_words;
  const uintptr_t readable_end = (from & ~(kPage - 1)) + readable_pages * kPage;
  return static_cast<size_t>(readable_end - from) / sizeof(uintptr_t);
}

bool is_call_modrm(uint8_t modrm, uint8_t mod) {
  return (modrm & 0x38) == 0x10 && (modrm >> 6) == mod;  // FF /2 with this mod
}

// Whether the bytes before `b` end with an indirect call (FF /2: through a register or
// memory, with or without SIB and displacement).
bool indirect_call_before(const uint8_t* b) {
  if (b[-2] == 0xFF && is_call_modrm(b[-1], 3)) return true;  // call reg
  if (b[-2] == 0xFF && is_call_modrm(b[-1], 0) && (b[-1] & 7) != 4 && (b[-1] & 7) != 5) {
    return true;  // call [reg]
  }
  if (b[-3] == 0xFF && b[-2] == 0x14) return true;                                // [sib]
  if (b[-3] == 0xFF && is_call_modrm(b[-2], 1) && (b[-2] & 7) != 4) return true;  // [reg+d8]
  if (b[-4] == 0xFF && b[-3] == 0x54) return true;                                // [sib+d8]
  if (b[-6] == 0xFF && b[-5] == 0x15) return true;                                // [rip+d32]
  if (b[-6] == 0xFF && is_call_modrm(b[-5], 2) && (b[-5] & 7) != 4) return true;  // [reg+d32]
  return b[-7] == 0xFF && b[-6] == 0x94;                                          // [sib+d32]
}

struct Scan {
  const std::vector<std::shared_ptr<const ObjectCfi>>* previous_objects;
  const std::vector<std::pair<uintptr_t, std::string>>* previous_without;
  const std::vector<uintptr_t>* wanted;
  std::vector<std::shared_ptr<const ObjectCfi>>* out;
  std::vector<std::pair<uintptr_t, std::string>>* without;
  const std::atomic<bool>* cancel;
  size_t compiled = 0;
  size_t skipped = 0;  // objects left without a table, for want of a sample in them
  bool cancelled = false;
};

bool holds_wanted(const dl_phdr_info* info, const std::vector<uintptr_t>& wanted) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    for (uintptr_t a : wanted) {
      if (a >= begin && a < begin + ph.p_memsz) return true;
    }
  }
  return false;
}

int on_object(dl_phdr_info* info, size_t, void* data) {
  auto* scan = static_cast<Scan*>(data);
  const ElfW(Phdr)* eh = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) eh = &info->dlpi_phdr[i];
  }
  if (eh == nullptr) return 0;
  const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  for (const auto& known : *scan->previous_objects) {
    if (known->load_base == info->dlpi_addr && known->name == name) {
      scan->out->push_back(known);
      return 0;
    }
  }
  const std::pair<uintptr_t, std::string> key{info->dlpi_addr, name};
  for (const auto& none : *scan->previous_without) {
    if (none == key) {
      scan->without->push_back(key);
      return 0;
    }
  }
  if (scan->wanted != nullptr && !holds_wanted(info, *scan->wanted)) {
    ++scan->skipped;
    return 0;
  }
  ++scan->compiled;
  auto object = std::make_shared<ObjectCfi>();
  object->load_base = info->dlpi_addr;
  object->name = name;
#if defined(__x86_64__)
  object->rows = compile_loaded_eh_frame(
      reinterpret_cast<const uint8_t*>(info->dlpi_addr + eh->p_vaddr), scan->cancel);
#endif
  if (scan->cancel != nullptr && scan->cancel->load(std::memory_order_relaxed)) {
    scan->cancelled = true;  // rows cut short would read as "no table": keep none
    return 1;
  }
  if (object->rows.empty()) {
    scan->without->push_back(key);
    return 0;
  }
  object->begin = object->rows.front().begin;
  object->end = object->rows.back().begin + 1;
  scan->out->push_back(std::move(object));
  return 0;
}

}  // namespace

std::unique_ptr<UnwindTables> UnwindTables::build(const UnwindTables* previous,
                                                  uintptr_t stop_begin, uintptr_t stop_end,
                                                  const std::vector<uintptr_t>* wanted,
                                                  size_t* compiled,
                                                  const std::atomic<bool>* cancel) {
  auto tables = std::make_unique<UnwindTables>();
  const UnwindTables empty;
  const UnwindTables& before = previous != nullptr ? *previous : empty;
  Scan scan{&before.objects_,  &before.without_,  wanted,
            &tables->objects_, &tables->without_, cancel};
  dl_iterate_phdr(on_object, &scan);
  if (compiled != nullptr) *compiled = scan.compiled;
  if (scan.cancelled) return nullptr;
  tables->complete_ = scan.skipped == 0;
  std::sort(tables->objects_.begin(), tables->objects_.end(),
            [](const auto& a, const auto& b) { return a->begin < b->begin; });
  for (const auto& object : tables->objects_) {
    tables->highest_ = std::max(tables->highest_, object->end);
  }
  if (!tables->objects_.empty()) tables->lowest_ = tables->objects_.front()->begin;
  if (stop_end != 0) {
    tables->lowest_ = tables->objects_.empty() ? stop_begin : std::min(tables->lowest_, stop_begin);
    tables->highest_ = std::max(tables->highest_, stop_end);
  }
  tables->stop_begin_ = stop_begin;
  tables->stop_end_ = stop_end;
  return tables;
}

const ObjectCfi* UnwindTables::object_at(uintptr_t pc) const {
  size_t lo = 0;
  size_t hi = objects_.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (objects_[mid]->begin <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0 || pc >= objects_[lo - 1]->end) return nullptr;
  return objects_[lo - 1].get();
}

bool UnwindTables::could_have_called_a_function_without_rules(uintptr_t ra) const {
  const auto* b = reinterpret_cast<const uint8_t*>(ra);
  if (b[-5] == 0xE8) {
    // A direct call says what it called: a value left on the stack by an earlier call, to
    // a function that has rules, is not the return address of one that has none.
    int32_t rel = 0;
    std::memcpy(&rel, b - 4, sizeof rel);
    return find(ra + static_cast<intptr_t>(rel)) == nullptr;
  }
  return indirect_call_before(b);
}

const CfiRow* UnwindTables::find(uintptr_t pc) const {
  const CfiRow* row = row_at(pc);
  return row == nullptr || (row->rule != CfaRule::kSp && row->rule != CfaRule::kFp) ? nullptr : row;
}

const CfiRow* UnwindTables::row_at(uintptr_t pc) const {
  // Plain loops over sorted arrays: nothing here may allocate or lock.
  const ObjectCfi* object = object_at(pc);
  if (object == nullptr) return nullptr;
  const CfiRows& rows = object->rows;
  size_t lo = 0;
  size_t hi = rows.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (rows[mid].begin <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo == 0 ? nullptr : &rows[lo - 1];
}

SPYGLASS_READS_ANY_STACK_WORD
size_t UnwindTables::walk(uintptr_t lookup, uintptr_t sp, uintptr_t fp, uintptr_t limit,
                          uintptr_t* out, size_t max, Walked* walked) const {
  size_t n = 0;
  walked->at = lookup;
  walked->sp = sp;
  while (n < max) {
    if (is_stop(lookup)) {
      walked->end = ChainEnd::kStop;
      return n;
    }
    const CfiRow* row = find(lookup);
    walked->at = lookup;
    if (row == nullptr) {
      walked->end = ChainEnd::kNoRule;
      return n;
    }
    const uintptr_t base = row->rule == CfaRule::kSp ? sp : fp;
    const uintptr_t cfa = base + static_cast<intptr_t>(row->cfa_offset);
    if (cfa <= sp || cfa > limit || (cfa & 7) != 0) {
      walked->end = ChainEnd::kMisread;
      return n;
    }
    const uintptr_t ra = *reinterpret_cast<const uintptr_t*>(cfa - 8);
    if (row->fp_offset != 0) {
      fp = *reinterpret_cast<const uintptr_t*>(cfa + static_cast<intptr_t>(row->fp_offset));
    }
    sp = cfa;
    walked->sp = sp;
    if (ra < 4096) {  // the outermost frame (a thread's start) ends the chain
      walked->end = ChainEnd::kOutermost;
      return n;
    }
    lookup = ra - 1;
    if (is_stop(lookup)) {
      walked->end = ChainEnd::kStop;
      return n;
    }
    out[n++] = ra;
  }
  walked->end = ChainEnd::kFull;
  return n;
}

bool UnwindTables::ends_as_a_true_chain(const Walked& walked, uintptr_t eval_bound) {
  if (walked.end == ChainEnd::kFull) return true;  // deeper than followed: judged by its start
  if (eval_bound == kNoEvalLoop) {
    return walked.end == ChainEnd::kStop || walked.end == ChainEnd::kOutermost;
  }
  // A Python thread's chain ends at its innermost eval loop, whose C frame is above the
  // last frame of the chain (and below every outer eval loop's).
  return walked.end == ChainEnd::kStop && walked.sp <= eval_bound;
}

SPYGLASS_READS_ANY_STACK_WORD
size_t UnwindTables::rescan_leaf(uintptr_t ra, uintptr_t sp, size_t words, uintptr_t fp,
                                 uintptr_t limit, uintptr_t* out, size_t max, uintptr_t eval_bound,
                                 Walked* walked) const {
  for (size_t i = 0; i < words; ++i) {
    const uintptr_t slot = sp + i * sizeof(uintptr_t);
    if (*reinterpret_cast<const uintptr_t*>(slot) != ra) continue;
    Walked trial;
    out[0] = ra;
    const size_t n =
        1 + walk(ra - 1, slot + sizeof(uintptr_t), fp, limit, out + 1, max - 1, &trial);
    if (ends_as_a_true_chain(trial, eval_bound)) {
      *walked = trial;
      return n;
    }
    for (size_t k = 0; k < n; ++k) out[k] = 0;
  }
  return 0;
}

SPYGLASS_READS_ANY_STACK_WORD
size_t UnwindTables::scan_leaf(uintptr_t leaf, uintptr_t sp, uintptr_t fp, uintptr_t limit,
                               uintptr_t* out, size_t max, uintptr_t eval_bound,
                               Walked* walked) const {
  const size_t words = readable_words(sp, kMaxScanWords);
  // The same leaf is mostly called from the same place: the return address found last time
  // is looked for first, and its chain taken if it still reaches the eval loop or a
  // thread's start. The whole scan below follows a hundred or more candidates' chains on a
  // BLAS kernel's stack; this, a comparison per word and one chain.
  RememberedReturn& remembered = remembered_[(leaf >> 4) % kRemembered];
  const uintptr_t known = remembered.ra.load(std::memory_order_relaxed);
  if (known != 0 && remembered.leaf.load(std::memory_order_relaxed) == leaf && max > 1) {
    const size_t n = rescan_leaf(known, sp, words, fp, limit, out, max, eval_bound, walked);
    if (n > 0) return n;
  }
  // Every word above the leaf that reads as a return address is tried. Stale return
  // addresses of earlier, deeper calls lie about too, and their frames read as a coherent
  // chain for a while, often as far as a return into the eval loop: a stale one, lower
  // down, or even the live one, when the eval loop made the earlier call from the same
  // frame. The true chain goes on to the eval loop (or a thread's start) through every live
  // frame, each of whose return addresses is one more word that reads as one: of the
  // candidates whose chain ends so, the one that ends highest, and of those the one with
  // the most frames.
  uintptr_t best_slot = 0;
  uintptr_t best_top = 0;
  size_t best_depth = 0;
  Walked best;
  uintptr_t not_compiled = 0;  // where a chain went into an object with no table yet
  size_t tried = 0;
  // A trial goes further than the chain kept: the true chain may be longer, and is told
  // from stale ones by where it ends.
  uintptr_t scratch[kMaxScanChain];
  for (size_t i = 0; i < words && tried < kMaxScanCandidates && max > 0; ++i) {
    const uintptr_t slot = sp + i * sizeof(uintptr_t);
    const uintptr_t value = *reinterpret_cast<const uintptr_t*>(slot);
    if (value <= lowest_ || value > highest_) continue;
    if (!is_stop(value - 1) && find(value - 1) == nullptr) continue;
    if (!could_have_called_a_function_without_rules(value)) continue;
    ++tried;
    Walked trial;
    size_t depth = 0;
    if (is_stop(value - 1)) {  // called from the eval loop itself: no callers to show
      trial.end = ChainEnd::kStop;
      trial.sp = slot + sizeof(uintptr_t);
    } else {
      depth =
          1 + walk(value - 1, slot + sizeof(uintptr_t), fp, limit, scratch, kMaxScanChain, &trial);
    }
    const bool whole = ends_as_a_true_chain(trial, eval_bound);
    if (whole && (trial.sp > best_top || (trial.sp == best_top && depth > best_depth))) {
      best_top = trial.sp;
      best_depth = depth;
      best_slot = slot;
      best = trial;
      // Into `out` at once: should a chain's rules misread the stack, the fault guard keeps
      // what `out` holds.
      for (size_t k = 0; k < max; ++k) out[k] = k >= depth ? 0 : k == 0 ? value : scratch[k - 1];
    }
    if (!whole && not_compiled == 0 && trial.end == ChainEnd::kNoRule &&
        object_at(trial.at) == nullptr) {
      not_compiled = trial.at;
      // Which object a true chain goes through is not known (a stale one may have gone
      // through this one): every object is wanted. Said at once, as a chain may yet
      // misread the stack and the scan never return.
      if (!complete_) wants_every_.store(true, std::memory_order_relaxed);
    }
  }
  if (best_slot == 0) {
    walked->end = ChainEnd::kNoRule;
    return 0;
  }
  *walked = best;
  if (not_compiled != 0 && complete_) not_compiled = 0;  // a misread, not a missing table
  if (best_depth > 0 && not_compiled == 0) {
    // Not while a chain went into an object with no table yet: the true one may be it,
    // and the best found so far only part of it.
    remembered.leaf.store(leaf, std::memory_order_relaxed);
    remembered.ra.store(out[0], std::memory_order_relaxed);
  }
  if (best.end == ChainEnd::kFull || best_depth > max) walked->end = ChainEnd::kFull;
  return best_depth < max ? best_depth : max;
}

size_t UnwindTables::unwind(uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t* out, size_t max,
                            bool* lost, uintptr_t* stopped_at, uintptr_t eval_bound) const {
  const uintptr_t limit = sp + kMaxStackSpan;
  // The interrupted instruction is looked up as it is; a return address is looked up one
  // byte back, inside the call (a call may be the last instruction of its function).
  Walked walked;
  size_t n = walk(pc, sp, fp, limit, out, max, &walked);
  const CfiRow* gap = n == 0 && walked.end == ChainEnd::kNoRule && eval_bound != kEvalLoopUnknown
                          ? row_at(pc)
                          : nullptr;
  if (gap != nullptr && gap->rule == CfaRule::kNoInfo) {
    // The interrupted code is covered by no function's information, in an object that has
    // it for its other functions: hand-written assembly (a BLAS kernel). Its return address
    // is found by scanning the stack above it. (Not code whose rule is a DWARF expression,
    // PLT stubs above all: samples land there often, and a scan costs.)
    n = scan_leaf(gap->begin, sp, fp, limit, out, max, eval_bound, &walked);
  }
  *lost = walked.end == ChainEnd::kNoRule || walked.end == ChainEnd::kMisread;
  if (*lost && stopped_at != nullptr) *stopped_at = walked.at;
  return n;
}

void interrupted_sp_fp(const void* ucontext, uintptr_t* sp, uintptr_t* fp) {
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  *sp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
  *fp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RBP]);
#else
  (void)ucontext;
  *sp = 0;
  *fp = 0;
#endif
}

}  // namespace spyglass::platform
