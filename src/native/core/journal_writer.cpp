#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "../platform/high_fd.hpp"
#include "journal.hpp"
#include "journal_format.hpp"

namespace spyglass {

namespace {

// A record appended to `out` by the callable, which writes the payload.
template <typename Fn>
void record(std::string* out, journal::Record type, Fn&& payload) {
  size_t start = 0;
  journal::begin(out, type, &start);
  ByteWriter w(out);
  payload(w);
  journal::end(out, start);
}

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void put_filter(ByteWriter& w, const FilterConfig& c) {
  for (const auto* list : {&c.program_paths, &c.library_prefixes, &c.internal_prefixes, &c.only,
                           &c.exclude, &c.pseudo_files}) {
    w.u32(static_cast<uint32_t>(list->size()));
    for (const std::string& s : *list) w.str(s);
  }
  w.u8(c.profile_all ? 1 : 0);
  w.u32(static_cast<uint32_t>(c.functions.size()));
  for (const auto& [file, line] : c.functions) {
    w.str(file);
    w.u32(static_cast<uint32_t>(line));
  }
}

std::string header_record(const JournalHeader& h) {
  std::string out;
  record(&out, journal::kHeader, [&](ByteWriter& w) {
    w.str(journal::kMagic);
    w.u32(journal::kVersion);
    w.u64(h.start_ns);
    w.f64(h.started_at);
    w.u64(h.interval_ns);
    w.u8(h.memory ? 1 : 0);
    w.u64(h.window_bytes);
    w.u64(h.copy_window_bytes);
    put_filter(w, h.scope);
    w.u32(static_cast<uint32_t>(h.meta.size()));
    for (const auto& [key, value] : h.meta) {
      w.str(key);
      w.str(value);
    }
  });
  return out;
}

void append_code(std::string* out, uint32_t id, const CodeInfo& info) {
  record(out, journal::kCode, [&](ByteWriter& w) {
    w.u32(id);
    w.u32(static_cast<uint32_t>(info.first_lineno));
    w.str(info.file);
    w.str(info.name);
  });
}

void append_stack(std::string* out, size_t index, const StackEntry& entry) {
  record(out, journal::kStack, [&](ByteWriter& w) {
    w.u64(index);
    w.u8(entry.truncated ? 1 : 0);
    w.u32(static_cast<uint32_t>(entry.frames.size()));
    for (const FrameKey& f : entry.frames) {
      w.u32(f.code_id);
      w.u32(static_cast<uint32_t>(f.line));
    }
  });
}

void append_tick(std::string* out, const JournalTick& tick) {
  record(out, journal::kTick, [&](ByteWriter& w) {
    w.u64(tick.now_ns);
    w.u64(tick.dropped_samples);
    w.u64(tick.dropped_memory_samples);
  });
}

}  // namespace

bool JournalWriter::open(const std::string& path, const JournalHeader& header) {
  close();
  path_ = path;
  header_record_ = header_record(header);
  pending_.clear();
  dirty_ = false;
  const StackTable no_stacks;
  const std::vector<CodeInfo> no_codes;
  const std::map<int32_t, Times> no_threads;
  MemoryStats no_memory;
  no_memory.reset(header.start_ns);
  last_tick_ns_ = header.start_ns;
  compact(JournalView{no_stacks, no_codes, no_threads, header.memory ? &no_memory : nullptr,
                      JournalTick{header.start_ns, 0, 0}});
  return is_open();
}

void JournalWriter::code(uint32_t id, const CodeInfo& info) {
  append_code(&pending_, id, info);
  dirty_ = true;
}

void JournalWriter::stack(size_t index, const StackEntry& entry) {
  append_stack(&pending_, index, entry);
  dirty_ = true;
}

void JournalWriter::times(size_t stack, int32_t tid, const Times& t) {
  record(&pending_, journal::kTimes, [&](ByteWriter& w) {
    w.u64(stack);
    w.u32(static_cast<uint32_t>(tid));
    journal::put_times(w, t);
  });
  dirty_ = true;
}

void JournalWriter::memory_alloc(size_t stack, uint64_t line, bool python_thread, int32_t tid,
                                 uint64_t t_ns, int64_t bytes, int64_t footprint_after,
                                 bool tracked, uint32_t sample_id, bool after_wait, bool importing,
                                 uint32_t outer_code) {
  record(&pending_, journal::kMemoryAlloc, [&](ByteWriter& w) {
    w.u64(stack);
    w.u64(line);
    w.u8(static_cast<uint8_t>((python_thread ? 1 : 0) | (tracked ? 2 : 0) | (after_wait ? 4 : 0) |
                              (importing ? 8 : 0)));
    w.u32(static_cast<uint32_t>(tid));
    w.u64(t_ns);
    w.i64(bytes);
    w.i64(footprint_after);
    w.u32(sample_id);
    w.u32(outer_code);
  });
  dirty_ = true;
}

void JournalWriter::outer_seen(uint32_t code, uint64_t t_ns) {
  record(&pending_, journal::kOuterSeen, [&](ByteWriter& w) {
    w.u32(code);
    w.u64(t_ns);
  });
  dirty_ = true;
}

void JournalWriter::sampled_free(uint32_t sample_id, uint64_t t_ns, int64_t footprint_after) {
  record(&pending_, journal::kSampledFree, [&](ByteWriter& w) {
    w.u32(sample_id);
    w.u64(t_ns);
    w.i64(footprint_after);
  });
  dirty_ = true;
}

void JournalWriter::tick(const JournalTick& tick) {
  // An idle interval writes nothing, but the time still counts toward elapsed_s: note it
  // once a second.
  const bool stale = tick.now_ns - last_tick_ns_ >= 1'000'000'000;
  if ((!dirty_ && !stale) || fd_ < 0) {
    pending_.clear();
    return;
  }
  last_tick_ns_ = tick.now_ns;
  append_tick(&pending_, tick);
  if (!owned()) {
    forget();
    return;
  }
  if (write_all(fd_, pending_)) {
    appended_bytes_ += pending_.size();
  } else {
    close();  // a full disk: the process's final profile is still written at exit
  }
  pending_.clear();
  dirty_ = false;
}

namespace {

void append_native(std::string* out, size_t stack, const std::vector<uintptr_t>& chain,
                   const NativeCost& cost) {
  record(out, journal::kNative, [&](ByteWriter& w) {
    w.u64(stack);
    w.u32(static_cast<uint32_t>(chain.size()));
    for (uintptr_t a : chain) w.u64(a);
    w.u64(cost.ns);
    w.u64(cost.samples);
  });
}

void append_objects(std::string* out, const std::vector<NativeObject>& objects) {
  record(out, journal::kNativeObjects, [&](ByteWriter& w) {
    w.u32(static_cast<uint32_t>(objects.size()));
    for (const NativeObject& o : objects) {
      w.u64(o.base);
      w.u64(o.begin);
      w.u64(o.end);
      w.str(o.path);
    }
  });
}

}  // namespace

void JournalWriter::native(size_t stack, const std::vector<uintptr_t>& chain,
                           const NativeCost& cost) {
  append_native(&pending_, stack, chain, cost);
  dirty_ = true;
}

void JournalWriter::native_objects(const std::vector<NativeObject>& objects) {
  append_objects(&pending_, objects);
  dirty_ = true;
}

bool JournalWriter::wants_compaction() const {
  // Replaying is linear in the file: rewriting once the records outgrow the dump keeps
  // the file within a few times the state's size, at an amortised constant cost.
  return fd_ >= 0 && appended_bytes_ > 256 * 1024 && appended_bytes_ > 2 * dump_bytes_;
}

void JournalWriter::compact(const JournalView& s) {
  std::string out = header_record_;
  for (uint32_t id = 0; id < s.codes.size(); ++id) append_code(&out, id, s.codes[id]);
  const std::vector<StackEntry>& entries = s.stacks.entries();
  for (size_t i = 0; i < entries.size(); ++i) {
    append_stack(&out, i, entries[i]);
    if (entries[i].times.empty()) continue;
    record(&out, journal::kStackTimes, [&](ByteWriter& w) {
      w.u64(i);
      journal::put_times(w, entries[i].times);
    });
  }
  for (const auto& [tid, t] : s.threads) {
    record(&out, journal::kThreadTimes, [&](ByteWriter& w) {
      w.u32(static_cast<uint32_t>(tid));
      journal::put_times(w, t);
    });
  }
  if (s.memory != nullptr) {
    record(&out, journal::kMemoryState, [&](ByteWriter& w) { s.memory->save(w); });
  }
  if (s.objects != nullptr && !s.objects->empty()) append_objects(&out, *s.objects);
  if (s.native != nullptr) {
    for (const auto& [stack, by_chain] : *s.native) {
      for (const auto& [chain, cost] : by_chain) append_native(&out, stack, chain, cost);
    }
  }
  append_tick(&out, s.tick);
  // A journal that cannot be rewritten (its directory gone with the run, a full disk)
  // would be retried every interval and grow without bound: give it up.
  if (!rewrite(out)) close();
}

bool JournalWriter::rewrite(const std::string& contents) {
  // A reader sees the old file or the new one, whole: never a half-written dump.
  const std::string tmp = path_ + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  fd = platform::move_fd_high(fd);  // not the number a program reuses first
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !write_all(fd, contents) ||
      std::rename(tmp.c_str(), path_.c_str()) != 0) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return false;
  }
  if (owned()) ::close(fd_);
  fd_ = fd;  // opened for writing at its end: appends go after the dump
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  appended_bytes_ = 0;
  dump_bytes_ = contents.size();
  return true;
}

bool JournalWriter::owned() const {
  // The program may have closed the journal's descriptor (closerange, a daemon's
  // close-everything) and reused the number for a file or socket of its own, or dup2'd
  // over it: what is behind the number now must still be the journal's file, or a write
  // would go into the program's data. Checked right before each write.
  if (fd_ < 0) return false;
  struct stat st {};
  return ::fstat(fd_, &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
}

void JournalWriter::forget() {
  // The number is the program's now: never closed or written by us again. The journal
  // is lost; the process still writes its profile when it ends.
  fd_ = -1;
  pending_.clear();
  dirty_ = false;
}

void JournalWriter::close() {
  if (owned()) ::close(fd_);
  forget();
}

}  // namespace spyglass
