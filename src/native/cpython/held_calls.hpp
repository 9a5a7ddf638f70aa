// CPU samples taken on a call instruction of a code whose call-site table (call_sites.hpp)
// was not built yet. The handler cannot tell then whether the call is into Python code
// (the interpreter's call machinery: Python time) or into C (native), so it classed every
// slot of the frame's value stack instead (SampleRecord::slot_callees). Such a sample is
// held here until the table is built, with the GIL, by the wait engine's next look; the
// table then names the callee's slot. Before, every code's first samples on calls were
// native: a short program of many small functions had a native share that was not there.
//
// A sample held too long (no table came), or held as a code dies, is let go as the handler
// found it: native.
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
  // Collector ticks a sample is held for at most, waiting for its table.
  static constexpr uint32_t kMaxTicks = 8;
  // Held at once at most; past that, samples go as they are.
  static constexpr size_t kMaxHeld = 256;

  // Holds `rec` if it is such a sample, asking `collection` for its code's table; false
  // when it goes on as it is.
  bool hold(const SampleRecord& rec, Collection& collection);

  enum class Release {
    kBuilt,  // those whose tables are built
    kTick,   // those, and those held kMaxDrains ticks (this one counted)
    kAll,    // all: the run ends, or a code dies (none may name it after)
  };
  // Lets go of the samples whose tables are built, classed by them, and of the others
  // `how` says, as they were: each is handed to `add`.
  template <typename Add>
  void release(Collection& collection, Release how, Add&& add) {
    size_t kept = 0;
    for (size_t i = 0; i < held_.size(); ++i) {
      Held& h = held_[i];
      const std::vector<int>* table = collection.call_site_copy(code_of(*h.rec));
      const bool expired =
          how == Release::kAll || (how == Release::kTick && ++h.ticks >= kMaxTicks);
      if (table == nullptr && !expired) {
        held_[kept++] = std::move(h);
        continue;
      }
      if (table != nullptr) classify(*h.rec, *table);
      add(*h.rec);
    }
    held_.resize(kept);
    // A copy no held sample needs any more is dropped; one made but not yet read is kept.
    for (auto it = copied_.begin(); it != copied_.end();) {
      bool needed = false;
      for (const Held& h : held_) needed = needed || code_of(*h.rec) == *it;
      if (needed) {
        ++it;
        continue;
      }
      collection.drop_call_site_copy(*it);
      it = copied_.erase(it);
    }
  }

  bool empty() const { return held_.empty(); }
  void clear() {
    held_.clear();
    copied_.clear();
  }

 private:
  struct Held {
    std::unique_ptr<SampleRecord> rec;
    uint32_t ticks = 0;
  };
  static PyCodeObject* code_of(const SampleRecord& rec) {
    return reinterpret_cast<PyCodeObject*>(rec.frames[0].code);
  }
  // Python when the table's slot held a Python callee; native (as found) otherwise.
  static void classify(SampleRecord& rec, const std::vector<int>& table);

  std::vector<Held> held_;
  std::vector<PyCodeObject*> copied_;  // codes whose tables were asked to be copied
};

}  // namespace spyglass::cpython
