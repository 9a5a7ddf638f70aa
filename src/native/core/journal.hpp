// The run journal: a child process's profile written as it is collected, so that a child
// killed without warning (SIGKILL, a crash, a pool or a timeout killing it) loses only its
// last sampling interval instead of everything.
//
// The file is a sequence of records, each a type byte and a payload length. It starts with
// a header and a dump of the whole state, then the control thread appends, once per
// sampling interval, the records that interval added: new code objects, new stacks, the
// times added to each stack, and the memory events in arrival order. Replaying those
// through the same aggregation code rebuilds exactly the state the process had at its
// last tick. When the appended records outgrow the dump, the file is rewritten as a new
// dump (atomically, by rename), so it stays proportional to the profile, not the run.
// A record cut short by the kill is ignored on reading.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "file_filter.hpp"
#include "memory_stats.hpp"
#include "profile_model.hpp"
#include "stack_table.hpp"
#include "times.hpp"

namespace spyglass {

struct JournalHeader {
  uint64_t start_ns = 0;  // the process's monotonic clock at start
  double started_at = 0;  // Unix time at start
  uint64_t interval_ns = 0;
  bool memory = false;
  uint64_t window_bytes = 0;
  uint64_t copy_window_bytes = 0;
  FilterConfig scope;  // to attribute samples as the process itself would
  MetaMembers meta;    // the Python layer's members (program, argv, options, ...)
};

struct JournalTick {
  uint64_t now_ns = 0;
  uint64_t dropped_samples = 0;
  uint64_t dropped_memory_samples = 0;
};

// The state a journal dump is written from, wherever it lives.
struct JournalView {
  const StackTable& stacks;
  const std::vector<CodeInfo>& codes;
  const std::map<int32_t, Times>& threads;
  const MemoryStats* memory;  // null when memory is not profiled
  JournalTick tick;
  const RawNativeChains* native = nullptr;  // the native breakdown, unnamed
  const std::vector<NativeObject>* objects = nullptr;
};

// Everything a profile is built from, as a journal replays it.
struct JournalState {
  JournalHeader header;
  StackTable stacks;
  std::vector<CodeInfo> codes;
  std::map<int32_t, Times> threads;
  MemoryStats memory;
  JournalTick last_tick;
  RawNativeChains native;
  std::vector<NativeObject> objects;  // every object seen, in the order first seen

  JournalView view() const {
    return JournalView{stacks,    codes,   threads, header.memory ? &memory : nullptr,
                       last_tick, &native, &objects};
  }
};

class JournalWriter {
 public:
  JournalWriter() = default;
  ~JournalWriter() { close(); }
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Creates the file with the header and an empty state. False if it cannot be written.
  bool open(const std::string& path, const JournalHeader& header);
  // Open as far as this object knows: the program may have taken the descriptor since,
  // which the next write finds out (owned()).
  bool is_open() const { return fd_ >= 0; }

  // Records of the current interval, buffered until tick().
  void code(uint32_t id, const CodeInfo& info);
  void stack(size_t index, const StackEntry& entry);
  void times(size_t stack, int32_t tid, const Times& t);
  void memory_alloc(size_t stack, uint64_t line, bool python_thread, int32_t tid, uint64_t t_ns,
                    int64_t bytes, int64_t footprint_after, bool tracked, uint32_t sample_id,
                    bool after_wait = false, bool importing = false, uint32_t outer_code = kNoCode);
  void sampled_free(uint32_t sample_id, uint64_t t_ns, int64_t footprint_after);
  void outer_seen(uint32_t code, uint64_t t_ns);
  void native(size_t stack, const std::vector<uintptr_t>& chain, const NativeCost& cost);
  void native_objects(const std::vector<NativeObject>& objects);

  // Ends an interval: appends its records with one write. An interval that added nothing
  // is written only once a second, to keep the elapsed time.
  void tick(const JournalTick& tick);
  // True when the appended records have outgrown the last dump: time to compact().
  bool wants_compaction() const;
  // Rewrites the file as the header and a dump of `state`. Call right after tick(), so
  // that no record is pending.
  void compact(const JournalView& state);
  // Closes the file, leaving it in place, and drops records not yet written (in a forked
  // child, the parent's).
  void close();

 private:
  bool rewrite(const std::string& contents);
  bool owned() const;  // fd_ still refers to the journal's file
  void forget();       // drops fd_ without closing it
  std::string path_;
  std::string header_record_;
  std::string pending_;
  int fd_ = -1;
  dev_t dev_ = 0;  // identity of the file fd_ was opened on
  ino_t ino_ = 0;
  bool dirty_ = false;  // records since the last tick
  uint64_t appended_bytes_ = 0;
  uint64_t dump_bytes_ = 0;
  uint64_t last_tick_ns_ = 0;  // of the last tick written
};

// Replays a journal's bytes. False (with `error` set) when they are not a journal; a
// record cut short at the end is not an error.
bool read_journal(std::string_view bytes, JournalState* state, std::string* error);

// The process's profile as JSON (schema of ProfileModel::to_json), without source text;
// with the native breakdown when `native` (the state's raw chains, named) is given.
std::string journal_profile_json(const JournalHeader& header, const JournalView& state,
                                 const NativeCosts* native = nullptr,
                                 const std::vector<NativeFunction>* functions = nullptr);

}  // namespace spyglass
