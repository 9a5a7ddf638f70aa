// What a run has collected so far, as the engines drain it in: stacks and their times, the
// code objects they name, each thread's times, and the run journal that mirrors them all
// (core/journal.hpp). Everything here runs with the collector's lock held; the control
// thread does not hold the GIL, so code objects are only read for immutable fields while
// alive (their deaths wait for the same lock).
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../core/file_filter.hpp"
#include "../core/journal.hpp"
#include "../core/line_visits.hpp"
#include "../core/native_costs.hpp"
#include "../core/profile_model.hpp"
#include "../core/sample.hpp"
#include "../core/stack_depths.hpp"
#include "../core/stack_table.hpp"
#include "../core/times.hpp"
#include "../platform/native_symbols.hpp"
#include "code_registry.hpp"
#include "library_waits.hpp"

namespace spyglass::cpython {

// Raw chains named by `symbols` (a return address by the call before it), and the names of
// the ids it gave out.
NativeCosts name_native_chains(const RawNativeChains& raw, platform::NativeSymbolizer& symbols);
std::vector<NativeFunction> native_function_names(const platform::NativeSymbolizer& symbols);

class Collection {
 public:
  // add_sample()'s answer for a sample that is spyglass's own, not the program's.
  static constexpr size_t kNotAdded = SIZE_MAX;

  // Empties everything for a new run. `scope` says which code is the user's (memory
  // executions are counted per line of it) and which is spyglass's own.
  void reset(const FilterConfig& scope);

  // Opens the journal of a child process (an empty path: none). A journal that cannot be
  // written costs only the protection it gives: the process still writes its profile.
  void open_journal(const std::string& path, const JournalHeader& header);
  bool journaling() const { return journal_.is_open(); }
  JournalWriter& journal() { return journal_; }
  // Ends the journal's interval; `memory`: the memory figures a compaction dumps. `last`:
  // the process writes its profile next, so a compaction would be rewritten for nothing.
  void journal_tick(const JournalTick& tick, const MemoryStats* memory, bool last = false);
  void close_journal() { journal_.close(); }

  // Frame keys of live code objects, naming each new one to the journal.
  void resolve_frames(const RawFrame* frames, uint16_t depth, FrameKey* keys);
  // Adds `t` to a stack and to its thread; returns the stack's index.
  size_t add_stack(const FrameKey* keys, uint16_t depth, bool truncated, int32_t tid,
                   const Times& t);
  // A CPU or wait sample: its stack's index, or kNotAdded when it was taken in spyglass's
  // own code (starting or stopping the profiler, a thread registering itself). Its frames
  // around the program's (a thread's bootstrap) are left to the model to hide.
  // Without `with_cpu`, a CPU sample only counts where it was seen, its CPU being charged
  // elsewhere (a young thread's: cpu_remainder.cpp).
  size_t add_sample(const SampleRecord& rec, bool with_cpu = true);
  // A sample's stack named now, its figures added later (add_named): one held a while
  // (held_calls.hpp), whose codes may die meanwhile. kNotAdded as add_sample says it.
  size_t name_sample(const SampleRecord& rec);
  // A stack named as name_sample does, but with spyglass's own frames on top of it left
  // out rather than the whole sample: where a thread is as it ends, below the profiler's
  // own stop() (none left: the empty stack, never kNotAdded).
  size_t name_stack_below_own(const SampleRecord& rec);
  // Whether any of `rec`'s frames is in a file of the program's (FileFilter: not a
  // library's, not spyglass's).
  bool has_program_frame(const SampleRecord& rec);
  void add_named(size_t index, const SampleRecord& rec);
  // Adds `t` to the stack at `index` (one already added) and to thread `tid`.
  void add_to_stack(size_t index, int32_t tid, const Times& t);
  // Native CPU charged to stack `index` without a sample of its own (a young thread's,
  // drawn from its kind: thread_kinds.hpp), in `chain`'s native functions.
  void add_native_cost(size_t index, const std::vector<uintptr_t>& chain, uint64_t ns);

  // Threads blocked in a library's call, for its own threads' samples (library_waits.hpp).
  LibraryWaits& library_waits() { return library_waits_; }
  // How long a note of library_waits() lends (0, the default: notes lend nothing).
  void set_lend_window(uint64_t ns) { library_waits_.set_window(ns); }
  // Where `rec` stands in the program: the line key (memory_stats.hpp) of its innermost
  // frame of the program (kNoLineKey: none), and the installed package whose Python code
  // that frame calls, the frame just inside it's (0: none, the program's frame is the
  // innermost, or the code it calls is not an installed package's).
  struct ProgramCall {
    uint64_t line = ~uint64_t{0};
    uint64_t package = 0;
  };
  ProgramCall program_call(const SampleRecord& rec);
  // A stack of thread `tid`, of `depth` frames (`frames`, resolved into `keys`) none of
  // which is the program's, run by a library's own Python thread (a pool of threads a call
  // into pandas hands its work to): when another thread was blocked, at `t_ns`, when the
  // sample was taken, in a call into a package among those of the stack's frames
  // (LibraryWaits::during), its stack's frames are put under
  // them, in `keys`, and the new depth returned (the program's line is then the waiting
  // caller's, which `line` gets when not null; `truncated` is set when frames had to be
  // left out); else `depth`.
  // (`caller`, when not null, gets the waiting thread's id.)
  uint16_t lend_to_waiting_caller(const RawFrame* frames, FrameKey* keys, uint16_t depth,
                                  int32_t tid, uint64_t t_ns, uint64_t* line, bool* truncated,
                                  int32_t* caller = nullptr);
  // The id of the outermost code of `frames` (resolved into `keys`) that is the program's;
  // kNoCode when none is, or when it is a module's (a script's, a prompt's statement).
  uint32_t outer_program_code(const RawFrame* frames, const FrameKey* keys, uint16_t depth);
  // The same for stack `stack` of the table, made of exactly those frames: worked out once
  // per stack, not over a memory sample's 40 frames at every sample of the main thread.
  uint32_t outer_program_code(size_t stack, const RawFrame* frames, const FrameKey* keys,
                              uint16_t depth) {
    if (stack >= outer_by_stack_.size()) outer_by_stack_.resize(stack + 1, kUnknownOuter);
    if (outer_by_stack_[stack] == kUnknownOuter) {
      outer_by_stack_[stack] = outer_program_code(frames, keys, depth);
    }
    return outer_by_stack_[stack];
  }
  // Where CPU and wait samples found each code the outermost of the program's, and when
  // (with line visits kept): the memory engine's, for the end of a line's work
  // (MemoryStats::work_end_seconds). Taken, the list starts anew.
  std::unordered_map<uint32_t, uint64_t> take_outer_sightings() {
    return std::exchange(outer_seen_, {});
  }
  // Whether lend_to_waiting_caller could lend such a stack of thread `tid` once a wait is
  // noted: a library's own thread's (not the main thread, no frame of the program's, one
  // of a package's), with waits being noted.
  bool lendable(const RawFrame* frames, const FrameKey* keys, uint16_t depth, int32_t tid);

  // The GPU engine charges each reading to the stacks sampled meanwhile: while on, every
  // CPU or wait sample added is remembered until taken.
  struct Recent {
    size_t stack;
    uint64_t cpu_ns;
    uint64_t wait_ns;
  };
  void keep_recent(bool on) {
    keep_recent_ = on;
    recent_.clear();
  }
  std::vector<Recent> take_recent() { return std::exchange(recent_, {}); }

  // Where CPU and wait samples found each thread in the program, for the memory engine's
  // executions (core/line_visits.hpp): kept only while on.
  void keep_line_visits(bool on) {
    keep_visits_ = on;
    visits_.clear();
    outer_seen_.clear();
  }
  LineVisits& line_visits() { return visits_; }

  // Call-site tables (call_sites.hpp) that samples found missing, built later with the GIL.
  bool wants_call_sites() const { return !wanted_call_sites_.empty(); }
  // Whether every code object seen as a caller in a stack gets its table built too: its
  // first sample inside a call then usually finds the table ready.
  void track_call_sites(bool on) { track_call_sites_ = on; }
  // With the GIL too: builds them. Every code in the set is alive: a dying one leaves it
  // (forget_call_sites) under the GIL, which the caller holds.
  void build_wanted_call_sites(const BytecodeFormat& format);
  void forget_call_sites(PyCodeObject* code) {
    wanted_call_sites_.erase(code);
    call_site_copies_.erase(code);
  }
  // A sample held for a code's table (held_calls.hpp) asks for it to be built and copied
  // here as it is: the drain reads the copy under the collector's lock, without the GIL
  // (the code's own extra slot may be moved by another user of it meanwhile).
  void want_call_site_copy(PyCodeObject* code) {
    wanted_call_sites_.insert(code);
    call_site_copies_.try_emplace(code);
  }
  // The copy, or null while the table is not built yet.
  const std::vector<int>* call_site_copy(PyCodeObject* code) const {
    auto it = call_site_copies_.find(code);
    return it == call_site_copies_.end() || !it->second.built ? nullptr : &it->second.table;
  }
  void drop_call_site_copy(PyCodeObject* code) { call_site_copies_.erase(code); }

  // Whether a sample has shown an event loop at work (an asyncio loop's own code, or a
  // coroutine's): only then does the wait engine look for suspended tasks.
  bool event_loop_seen() const { return event_loop_seen_; }
  // An asyncio task's await time, by task name and coroutine; at most kMaxTasks of them,
  // later ones added up as one "[other]" entry.
  void add_task_await(const std::string& name, const std::string& coroutine, uint64_t ns);
  std::vector<TaskAwait> tasks() const;
  static constexpr size_t kMaxTasks = 200;

  // Whether a code object is the user's (by the run's scope) / spyglass's own; memoised.
  bool is_profiled_code(uint32_t id, PyCodeObject* code);
  bool is_internal_code(uint32_t id, PyCodeObject* code);
  // Whether a code is the import system's own (importlib's bootstrap, frozen or not): what
  // a line allocates under it, it allocates importing a module.
  bool is_import_code(uint32_t id, PyCodeObject* code);

  const StackTable& stacks() const { return stacks_; }
  // Native samples' time by the native function they interrupted, and those functions'
  // names. Both are worked out here, when the profile is built after the run: naming an
  // address may walk the loader's list of objects (dl_iterate_phdr, which takes the
  // loader's lock), and samples are added with the collector's lock held, which a thread
  // inside dlopen may be waiting for. Call native_costs() first: it gives the ids that
  // native_functions() names.
  NativeCosts native_costs() const;
  // The loaded objects now (any thread, no collector lock needed): journalled if new.
  void offer_native_objects(std::vector<NativeObject> objects);
  std::vector<NativeFunction> native_functions() const;
  CodeRegistry& codes() { return codes_; }
  const CodeRegistry& codes() const { return codes_; }
  std::vector<ThreadInfo> threads(const std::map<int32_t, std::string>& names) const;

 private:
  static constexpr size_t kProgramsStack = SIZE_MAX;
  // The packages of `frames`' code, into `packages` (room for kMaxStackDepth), and how
  // many; kProgramsStack when a frame is the program's.
  size_t library_packages(const RawFrame* frames, const FrameKey* keys, uint16_t depth,
                          uint64_t* packages);
  // What adding `t` to stack `index` adds besides: its thread's figures, the recent
  // samples, the journal.
  void note_times(size_t index, int32_t tid, const Times& t);
  StackTable stacks_;
  std::unordered_map<uint32_t, uint64_t> outer_seen_;  // take_outer_sightings()
  static constexpr uint32_t kUnknownOuter = kNoCode - 1;
  std::vector<uint32_t> outer_by_stack_;  // outer_program_code by stack
  // Per stack, the native time by interrupted address and the return addresses of its
  // native callers, named only by native_costs().
  RawNativeChains native_by_pc_;
  // The loaded objects, journalled for a reader in another process to name the chains:
  // handed over by the CPU engine outside the collector's lock (finding them takes the
  // loader's), written with the next tick.
  std::mutex objects_mutex_;
  std::vector<NativeObject> objects_;
  bool objects_pending_ = false;
  mutable platform::NativeSymbolizer symbols_;  // a cache: naming is logically const
  CodeRegistry codes_;
  std::map<int32_t, Times> thread_times_;
  JournalWriter journal_;
  std::unique_ptr<FileFilter> scope_;
  std::vector<int8_t> profiled_code_;   // per code id: -1 not yet known, else the verdict
  std::vector<int8_t> internal_code_;   // the same for "spyglass's own code"
  std::vector<int8_t> import_code_;     // the same for the import system's code
  std::vector<uint64_t> code_package_;  // per code id: kUnknownPackage, else its package
  static constexpr uint64_t kUnknownPackage = UINT64_MAX;
  uint64_t code_package(uint32_t id, PyCodeObject* code);
  // The stack of `rec` resolved into `keys`; false when it is spyglass's own.
  bool resolve_sample(const SampleRecord& rec, FrameKey* keys);
  static Times sample_times(const SampleRecord& rec, bool with_cpu);
  // The depth of `rec`'s stack in `keys`, lent to a waiting caller where it may be
  // (`truncated` set where that left frames out).
  uint16_t lent_depth(const SampleRecord& rec, FrameKey* keys, bool* truncated);
  void add_native(size_t index, const std::vector<uintptr_t>& chain, const NativeCost& cost);
  std::unordered_set<PyCodeObject*> wanted_call_sites_;  // live codes sampled on a call
  LibraryWaits library_waits_;
  bool track_call_sites_ = false;
  struct CallSiteCopy {
    bool built = false;
    std::vector<int> table;
  };
  std::unordered_map<PyCodeObject*, CallSiteCopy> call_site_copies_;
  bool keep_recent_ = false;
  bool keep_visits_ = false;
  LineVisits visits_;
  // Notes where the sample `rec` (resolved into `keys`) found its thread.
  void note_visit(const SampleRecord& rec, const FrameKey* keys);
  bool event_loop_seen_ = false;
  std::map<std::pair<std::string, std::string>, uint64_t> task_await_;
  std::vector<Recent> recent_;
};

}  // namespace spyglass::cpython
