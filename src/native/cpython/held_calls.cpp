#include "held_calls.hpp"

#include <algorithm>

#include "call_sites.hpp"

namespace spyglass::cpython {

bool HeldCalls::hold(const SampleRecord& rec, Collection& collection) {
  if (rec.kind != SampleKind::kCpu || !rec.wants_call_sites || rec.depth == 0 ||
      rec.slot_callees == 0 || rec.cpu_class != CpuClass::kNative || held_.size() >= kMaxHeld) {
    return false;
  }
  PyCodeObject* code = code_of(rec);
  collection.want_call_site_copy(code);
  if (std::find(copied_.begin(), copied_.end(), code) == copied_.end()) copied_.push_back(code);
  held_.push_back(Held{std::make_unique<SampleRecord>(rec), 0});
  return true;
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

}  // namespace spyglass::cpython
