// CPU samples taken on a call instruction of a code whose call-site table (call_sites.hpp)
// was not built yet. The handler cannot tell then whether the call is into Python code
// (the interpreter's call machinery: Python time) or into C (native), so it classed every
// slot of the frame's value stack instead (SampleRecord::slot_callees). Such a sample's
// stack is named at once (its codes may die), and its figures are held here until the
// table is built, with the GIL, at the wait engine's next look; the table then names the
// callee's slot. Before, every code's first samples on calls were native: a short program
// of many small functions had a native share that was not there.
//
// A sample held kMaxTicks ticks with no table, or whose code dies or whose thread ends
// first, is let go as the handler found it: native.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "../core/sample.hpp"
#include "collection.hpp"

namespace spyglass::cpython {

class HeldCalls {
 public:
  // Collector ticks a sample is held for at most, waiting for its table (the tick it came
  // in counts).
  static constexpr uint32_t kMaxTicks = 8;
  // Held at once at most; past that, samples go as they are.
  static constexpr size_t kMaxHeld = 256;

  struct Held {
    std::unique_ptr<SampleRecord> rec;
    size_t stack = 0;  // named already (Collection::name_sample)
    uint64_t seq = 0;  // the thread's count of samples when it came (CpuEngine)
    uint32_t ticks = 0;
  };

  // Whether `rec` is such a sample, and there is room for it.
  bool wants(const SampleRecord& rec) const;
  // Holds it, its stack named at `stack`, asking `collection` for its code's table.
  void hold(const SampleRecord& rec, size_t stack, uint64_t seq, Collection& collection);

  // Lets go of the samples whose tables are built, classed by them, and of those
  // `must_go(held)` picks, as they were: each is handed to `add(held)`.
  template <typename MustGo, typename Add>
  void release(Collection& collection, MustGo&& must_go, Add&& add) {
    size_t kept = 0;
    std::vector<PyCodeObject*> let_go;
    for (size_t i = 0; i < held_.size(); ++i) {
      Held& h = held_[i];
      const std::vector<int>* table = collection.call_site_copy(code_of(*h.rec));
      if (table == nullptr && !must_go(h)) {
        if (kept != i) held_[kept] = std::move(h);
        ++kept;
        continue;
      }
      if (table != nullptr) classify(*h.rec, *table);
      add(static_cast<const Held&>(h));
      let_go.push_back(code_of(*h.rec));
    }
    held_.resize(kept);
    drop_unneeded_copies(collection, let_go);
  }

  // Counts a tick for each sample held (see expired).
  void tick() {
    for (Held& h : held_) ++h.ticks;
  }
  static bool expired(const Held& h) { return h.ticks >= kMaxTicks; }
  static PyCodeObject* code_of(const SampleRecord& rec) {
    return reinterpret_cast<PyCodeObject*>(rec.frames[0].code);
  }

  bool empty() const { return held_.empty(); }
  void clear() { held_.clear(); }

 private:
  // Python when the table's slot held a Python callee; native (as found) otherwise.
  static void classify(SampleRecord& rec, const std::vector<int>& table);
  // The copies of `codes`' tables that no sample still held needs are dropped.
  void drop_unneeded_copies(Collection& collection, const std::vector<PyCodeObject*>& codes);

  std::vector<Held> held_;
};

}  // namespace spyglass::cpython
