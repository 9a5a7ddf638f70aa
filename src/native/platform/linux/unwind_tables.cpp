#include "../unwind_tables.hpp"

#include <link.h>
#include <ucontext.h>

#include <algorithm>

namespace spyglass::platform {

namespace {

// Frames larger than this, or a caller's stack pointer this far above the interrupted one,
// are taken for a misread rule rather than for a real stack.
constexpr uintptr_t kMaxStackSpan = uintptr_t{64} << 20;

struct Scan {
  const std::vector<std::shared_ptr<const ObjectCfi>>* previous_objects;
  const std::vector<std::pair<uintptr_t, std::string>>* previous_without;
  const std::vector<uintptr_t>* wanted;
  std::vector<std::shared_ptr<const ObjectCfi>>* out;
  std::vector<std::pair<uintptr_t, std::string>>* without;
  size_t compiled = 0;
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
  if (scan->wanted != nullptr && !holds_wanted(info, *scan->wanted)) return 0;
  ++scan->compiled;
  auto object = std::make_shared<ObjectCfi>();
  object->load_base = info->dlpi_addr;
  object->name = name;
#if defined(__x86_64__)
  object->rows =
      compile_loaded_eh_frame(reinterpret_cast<const uint8_t*>(info->dlpi_addr + eh->p_vaddr));
#endif
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
                                                  size_t* compiled) {
  auto tables = std::make_unique<UnwindTables>();
  const UnwindTables empty;
  const UnwindTables& before = previous != nullptr ? *previous : empty;
  Scan scan{&before.objects_, &before.without_, wanted, &tables->objects_, &tables->without_};
  dl_iterate_phdr(on_object, &scan);
  if (compiled != nullptr) *compiled = scan.compiled;
  std::sort(tables->objects_.begin(), tables->objects_.end(),
            [](const auto& a, const auto& b) { return a->begin < b->begin; });
  tables->stop_begin_ = stop_begin;
  tables->stop_end_ = stop_end;
  return tables;
}

const CfiRow* UnwindTables::find(uintptr_t pc) const {
  // Plain loops over sorted arrays: nothing here may allocate or lock.
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
  if (lo == 0) return nullptr;
  const ObjectCfi& object = *objects_[lo - 1];
  if (pc >= object.end) return nullptr;
  const std::vector<CfiRow>& rows = object.rows;
  lo = 0;
  hi = rows.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (rows[mid].begin <= pc) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return nullptr;
  const CfiRow* row = &rows[lo - 1];
  return row->rule == CfaRule::kUnknown ? nullptr : row;
}

size_t UnwindTables::unwind(uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t* out, size_t max,
                            bool* lost, uintptr_t* stopped_at) const {
  *lost = false;
  size_t n = 0;
  const uintptr_t limit = sp + kMaxStackSpan;
  // The interrupted instruction is looked up as it is; a return address is looked up one
  // byte back, inside the call (a call may be the last instruction of its function).
  uintptr_t lookup = pc;
  while (n < max) {
    if (is_stop(lookup)) return n;
    const CfiRow* row = find(lookup);
    if (row == nullptr) break;
    const uintptr_t base = row->rule == CfaRule::kSp ? sp : fp;
    const uintptr_t cfa = base + static_cast<intptr_t>(row->cfa_offset);
    if (cfa <= sp || cfa > limit || (cfa & 7) != 0) break;
    const uintptr_t ra = *reinterpret_cast<const uintptr_t*>(cfa - 8);
    if (row->fp_offset != 0) {
      fp = *reinterpret_cast<const uintptr_t*>(cfa + static_cast<intptr_t>(row->fp_offset));
    }
    sp = cfa;
    if (ra < 4096) return n;  // the outermost frame (a thread's start) ends the chain
    lookup = ra - 1;
    if (is_stop(lookup)) return n;
    out[n++] = ra;
  }
  *lost = n < max;
  if (stopped_at != nullptr) *stopped_at = lookup;
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
