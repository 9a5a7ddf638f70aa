#include "held_calls.hpp"

#include <algorithm>

#include "call_sites.hpp"

namespace spyglass::cpython {

bool HeldCalls::wants(const SampleRecord& rec) const {
  bool classed = false;
  for (uint64_t word : rec.slot_callees) classed = classed || word != 0;
  return rec.kind == SampleKind::kCpu && rec.wants_call_sites && rec.depth > 0 && classed &&
         rec.cpu_class == CpuClass::kNative && held_.size() < kMaxHeld;
}

void HeldCalls::hold(const SampleRecord& rec, size_t stack, uint64_t seq, Collection& collection) {
  PyCodeObject* code = code_of(rec);
  collection.want_call_site_copy(code);
  held_.push_back(Held{std::make_unique<SampleRecord>(rec), stack, seq, 0});
}

void HeldCalls::classify(SampleRecord& rec, const std::vector<int>& table) {
  rec.wants_call_sites = false;  // the table is there: nothing more to ask for
  if (callee_in_slots(table, rec.frames[0].instr_offset, rec.slot_callees) != Callee::kPython) {
    return;
  }
  rec.cpu_class = CpuClass::kPython;
  rec.native_depth = 0;
  rec.native_stop = 0;
}

void HeldCalls::drop_unneeded_copies(Collection& collection,
                                     const std::vector<PyCodeObject*>& codes) {
  for (PyCodeObject* code : codes) {
    const bool needed = std::any_of(held_.begin(), held_.end(),
                                    [code](const Held& h) { return code_of(*h.rec) == code; });
    if (!needed) collection.drop_call_site_copy(code);
  }
}

}  // namespace spyglass::cpython
