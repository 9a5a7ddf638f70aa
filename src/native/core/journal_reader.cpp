#include <cstdio>

#include "journal.hpp"
#include "journal_format.hpp"
#include "profile_memory.hpp"

namespace spyglass {

namespace {

FilterConfig get_filter(ByteReader& r) {
  FilterConfig c;
  for (auto* list : {&c.program_paths, &c.library_prefixes, &c.internal_prefixes, &c.only,
                     &c.exclude, &c.pseudo_files}) {
    for (uint32_t n = r.u32(); r.ok() && n > 0; --n) list->push_back(r.str());
  }
  c.profile_all = r.u8() != 0;
  for (uint32_t n = r.u32(); r.ok() && n > 0; --n) {
    std::string file = r.str();
    c.functions.emplace_back(std::move(file), static_cast<int>(r.u32()));
  }
  return c;
}

JournalTick get_tick(ByteReader& r) {
  JournalTick t;
  t.now_ns = r.u64();
  t.dropped_samples = r.u64();
  t.dropped_memory_samples = r.u64();
  return t;
}

// Applies one record to the state; false when it does not fit what came before it.
bool apply(journal::Record type, ByteReader& r, JournalState* s) {
  switch (type) {
    case journal::kCode: {
      const uint32_t id = r.u32();
      const int first_lineno = static_cast<int>(r.u32());
      std::string file = r.str();
      std::string name = r.str();
      if (!r.ok() || id > s->codes.size() + 1'000'000) return false;
      if (id >= s->codes.size()) s->codes.resize(id + 1);
      s->codes[id] = CodeInfo{std::move(file), std::move(name), first_lineno};
      return true;
    }
    case journal::kStack: {
      const uint64_t index = r.u64();
      const bool truncated = r.u8() != 0;
      const uint32_t depth = r.u32();
      if (!r.ok() || depth > r.remaining() / 8) return false;
      std::vector<FrameKey> frames(depth);
      for (FrameKey& f : frames) {
        f.code_id = r.u32();
        f.line = static_cast<int32_t>(r.u32());
      }
      // Replayed in the order they were first seen, stacks get their original indices.
      return r.ok() && s->stacks.add(frames.data(), depth, truncated, Times{}) == index;
    }
    case journal::kTimes:
    case journal::kStackTimes: {
      const uint64_t stack = r.u64();
      const int32_t tid = type == journal::kTimes ? static_cast<int32_t>(r.u32()) : 0;
      const Times t = journal::get_times(r);
      if (!r.ok() || stack >= s->stacks.size()) return false;
      s->stacks.add_to(stack, t);
      if (type == journal::kTimes) s->threads[tid] += t;
      return true;
    }
    case journal::kThreadTimes: {
      const auto tid = static_cast<int32_t>(r.u32());
      s->threads[tid] += journal::get_times(r);
      return r.ok();
    }
    case journal::kMemoryState:
      return s->memory.load(r);
    case journal::kMemoryAlloc: {
      const uint64_t stack = r.u64();
      const uint64_t line = r.u64();
      const uint8_t flags = r.u8();
      const auto tid = static_cast<int32_t>(r.u32());
      const uint64_t t_ns = r.u64();
      const int64_t bytes = r.i64();
      const int64_t footprint = r.i64();
      const uint32_t id = r.u32();
      const uint32_t outer = r.u32();
      if (!r.ok()) return false;
      s->memory.add_alloc(stack, line, (flags & 1) != 0, tid, t_ns, bytes, footprint,
                          (flags & 2) != 0, id, (flags & 4) != 0, (flags & 8) != 0, outer);
      return true;
    }
    case journal::kOuterSeen: {
      const uint32_t code = r.u32();
      const uint64_t t_ns = r.u64();
      if (!r.ok()) return false;
      s->memory.saw_outer(code, t_ns);
      return true;
    }
    case journal::kSampledFree: {
      const uint32_t id = r.u32();
      const uint64_t t_ns = r.u64();
      const int64_t footprint = r.i64();
      if (!r.ok()) return false;
      s->memory.sampled_free(id, t_ns, footprint);
      return true;
    }
    case journal::kTick:
      s->last_tick = get_tick(r);
      return r.ok();
    case journal::kNative: {
      const uint64_t stack = r.u64();
      const uint32_t n = r.u32();
      if (!r.ok() || n == 0 || n > r.remaining() / 8) return false;
      std::vector<uintptr_t> chain(n);
      for (uintptr_t& a : chain) a = static_cast<uintptr_t>(r.u64());
      NativeCost cost;
      cost.ns = r.u64();
      cost.samples = r.u64();
      if (!r.ok() || stack >= s->stacks.size()) return false;
      s->native[stack][chain] += cost;
      return true;
    }
    case journal::kNativeObjects: {
      const uint32_t n = r.u32();
      for (uint32_t i = 0; i < n && r.ok(); ++i) {
        NativeObject o;
        o.base = static_cast<uintptr_t>(r.u64());
        o.begin = static_cast<uintptr_t>(r.u64());
        o.end = static_cast<uintptr_t>(r.u64());
        o.path = r.str();
        bool known = false;
        for (const NativeObject& k : s->objects)
          known = known || (k.base == o.base && k.path == o.path);
        if (!known && r.ok()) s->objects.push_back(std::move(o));
      }
      return r.ok();
    }
    default:
      return true;  // a record of a later version: skipped
  }
}

// Where the journal's last complete interval ends: records after the last tick belong to
// an interval that was being written when the process died.
size_t end_of_last_tick(std::string_view bytes) {
  ByteReader in(bytes);
  size_t end = 0;
  while (in.remaining() >= journal::kRecordHead) {
    const auto type = static_cast<journal::Record>(in.u8());
    const uint32_t length = in.u32();
    if (length > in.remaining()) break;
    in.take(length);
    if (type == journal::kTick) end = bytes.size() - in.remaining();
  }
  return end;
}

bool read_header(ByteReader& r, JournalHeader* h, std::string* error) {
  if (r.str() != journal::kMagic) {
    *error = "not a spyglass run journal";
    return false;
  }
  if (r.u32() != journal::kVersion) {
    *error = "a run journal of another spyglass version";
    return false;
  }
  h->start_ns = r.u64();
  h->started_at = r.f64();
  h->interval_ns = r.u64();
  h->memory = r.u8() != 0;
  h->window_bytes = r.u64();
  h->copy_window_bytes = r.u64();
  h->scope = get_filter(r);
  const uint32_t members = r.u32();
  h->meta.clear();
  for (uint32_t i = 0; i < members && r.ok(); ++i) {
    std::string key = r.str();
    h->meta.emplace_back(std::move(key), r.str());
  }
  if (!r.ok()) *error = "a run journal with a damaged header";
  return r.ok();
}

}  // namespace

bool read_journal(std::string_view bytes, JournalState* state, std::string* error) {
  *state = JournalState();
  ByteReader in(bytes.substr(0, end_of_last_tick(bytes)));
  if (in.remaining() == 0) {
    *error = bytes.empty() ? "an empty run journal" : "a run journal with no complete interval";
    return false;
  }
  bool have_header = false;
  while (in.remaining() > 0) {
    const auto type = static_cast<journal::Record>(in.u8());
    ByteReader r(in.take(in.u32()));
    if (!have_header) {
      if (type != journal::kHeader) {
        *error = "not a spyglass run journal";
        return false;
      }
      if (!read_header(r, &state->header, error)) return false;
      have_header = true;
    } else if (!apply(type, r, state)) {
      *error = "a damaged run journal";
      return false;
    }
  }
  return have_header;
}

std::string journal_profile_json(const JournalHeader& header, const JournalView& s,
                                 const NativeCosts* native,
                                 const std::vector<NativeFunction>* functions) {
  std::vector<ThreadInfo> threads;
  for (const auto& [tid, t] : s.threads) threads.push_back(ThreadInfo{tid, std::string(), t});
  // Executions still open when the process died count, as they would have at its stop.
  MemoryStats memory;
  if (s.memory != nullptr) {
    memory = *s.memory;
    memory.finish();
  }
  ProfileModel model = ProfileModel::build(s.stacks, s.codes, FileFilter(header.scope), threads,
                                           s.memory != nullptr ? &memory : nullptr);
  RunInfo run;
  run.elapsed_s = s.tick.now_ns > header.start_ns
                      ? static_cast<double>(s.tick.now_ns - header.start_ns) / 1e9
                      : 0.0;
  run.interval_s = static_cast<double>(header.interval_ns) / 1e9;
  run.dropped_samples = s.tick.dropped_samples;
  run.memory.profiled = s.memory != nullptr;
  run.memory.window_mb = bytes_to_mb(static_cast<double>(header.window_bytes));
  run.memory.copy_window_mb = bytes_to_mb(static_cast<double>(header.copy_window_bytes));
  run.memory.dropped_samples = s.tick.dropped_memory_samples;
  // The Python layer wrote its members before the run started; the start time is the journal's.
  char started[64];
  std::snprintf(started, sizeof started, "%.6f", header.started_at);
  MetaMembers meta{{"started_at", started}};
  meta.insert(meta.end(), header.meta.begin(), header.meta.end());
  if (native != nullptr && functions != nullptr && !native->empty()) {
    model.attach_native(*native, *functions, s.codes);
  }
  return model.to_json(meta, run, {}, s.stacks, s.codes);
}

}  // namespace spyglass
