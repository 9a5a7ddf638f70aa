#include "profile_model.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "json_writer.hpp"

namespace spyglass {

double ns_to_s(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

ProfileModel ProfileModel::build(const StackTable& stacks, const std::vector<CodeInfo>& codes,
                                 const FileFilter& filter, std::vector<ThreadInfo> threads,
                                 const MemoryStats* memory, const GpuStats* gpu) {
  ProfileModel model;
  if (gpu != nullptr) model.gpu_.begin(*gpu);
  // Stacks attributed to each line and function, for the memory figures that do not add.
  struct Group {
    std::vector<size_t> stacks;
    std::vector<uint64_t> keys;
  };
  std::map<std::string, std::map<int, Group>> line_groups;
  std::map<std::string, std::map<std::pair<int, std::string>, Group>> fn_groups;
  std::vector<int8_t> profiled(codes.size(), -1);  // memoised filter verdict per code
  auto is_profiled = [&](uint32_t id) {
    if (id >= codes.size()) return false;
    if (profiled[id] < 0) {
      profiled[id] = filter.is_profiled(codes[id].file, codes[id].first_lineno) ? 1 : 0;
    }
    return profiled[id] == 1;
  };
  model.visible_depth_.reserve(stacks.entries().size());
  model.stack_hits_.reserve(stacks.entries().size());
  for (size_t index = 0; index < stacks.entries().size(); ++index) {
    const StackEntry& e = stacks.entries()[index];
    // Leave out the frames that lead from the process's start into the program through
    // internal code (runpy for `-m`, spyglass's own): from the root through the first run of
    // internal frames, when that run starts near the root. At least the innermost frame
    // stays, so that every sample with a Python frame has a stack.
    const auto internal = [&](size_t k) {
      return e.frames[k].code_id < codes.size() &&
             filter.is_internal(codes[e.frames[k].code_id].file);
    };
    size_t depth = e.frames.size();
    constexpr size_t kStartReach = 4;  // frames between the root and that internal code
    for (size_t from_root = 0; from_root < kStartReach && from_root < depth; ++from_root) {
      if (!internal(depth - 1 - from_root)) continue;
      size_t k = depth - 1 - from_root;  // first internal frame; skip the run of them
      while (k > 0 && internal(k)) --k;
      depth = internal(k) ? 1 : k + 1;
      break;
    }
    model.visible_depth_.push_back(static_cast<uint16_t>(depth));
    model.total_ += e.times;
    const FrameKey* hit = nullptr;
    for (const FrameKey& f : e.frames) {  // innermost first
      if (is_profiled(f.code_id)) {
        hit = &f;
        break;
      }
    }
    model.stack_hits_.push_back(hit != nullptr ? *hit : FrameKey{kNoHit, 0});
    if (hit == nullptr) {
      model.unattributed_ += e.times;
      continue;
    }
    const CodeInfo& code = codes[hit->code_id];
    FileStats& file = model.files_[code.file];
    file.times += e.times;
    file.lines[hit->line] += e.times;
    file.functions[{code.first_lineno, code.name}] += e.times;
    if (gpu != nullptr)
      model.gpu_.add(*gpu, index, code.file, hit->line, {code.first_lineno, code.name});
    if (memory != nullptr) {
      const uint64_t key = line_key(hit->code_id, hit->line);
      Group& line = line_groups[code.file][hit->line];
      line.stacks.push_back(index);
      line.keys.push_back(key);
      Group& fn = fn_groups[code.file][{code.first_lineno, code.name}];
      fn.stacks.push_back(index);
      fn.keys.push_back(key);
      if (index == memory->max_footprint_stack()) {
        model.max_footprint_file_ = code.file;
        model.max_footprint_line_ = hit->line;
      }
    }
  }
  if (memory != nullptr) {
    model.memory_ = true;
    for (auto& [path, file] : model.files_) {
      for (const auto& [line, g] : line_groups[path]) {
        file.line_memory[line] = summarize_memory(g.stacks, g.keys, *memory);
      }
      for (const auto& [key, g] : fn_groups[path]) {
        file.function_memory[key] = summarize_memory(g.stacks, g.keys, *memory);
      }
    }
    model.max_footprint_bytes_ = static_cast<double>(memory->max_footprint_bytes());
    model.final_footprint_bytes_ = static_cast<double>(memory->final_footprint_bytes());
    model.native_thread_alloc_bytes_ = static_cast<double>(memory->native_thread_alloc_bytes());
    model.freed_bytes_ = static_cast<double>(memory->freed_bytes());
    std::vector<TimePoint> points = memory->footprint().points();
    for (TimePoint& p : points) p.value = std::max(p.value, 0.0);
    model.footprint_timeline_ = reduce_timeline(points, kRunTimelinePoints);
  }
  std::sort(threads.begin(), threads.end(),
            [](const ThreadInfo& a, const ThreadInfo& b) { return a.tid < b.tid; });
  model.threads_ = std::move(threads);
  return model;
}

namespace {

// `zeros`: whether figures that are 0 are written. A thread's and a stack's rows leave
// them out (schema 3; the Python side's fields.ZERO_LEVELS names the same ones): a run of
// hundreds of threads writes thousands of these rows, most of whose figures are 0, and a
// reader takes an absent one as 0.
void write_times(JsonWriter& w, const Times& t, Zeros zeros = Zeros::kWritten) {
  const auto seconds = [&](const char* key, uint64_t ns) {
    if (ns == 0 && zeros == Zeros::kLeftOut) return;
    w.key(key);
    w.value(ns_to_s(ns));
  };
  seconds("cpu_python_s", t.python_ns);
  seconds("cpu_native_s", t.native_ns);
  seconds("cpu_system_s", t.system_ns);
  seconds("wait_s", t.wait_ns);
  if (t.samples != 0 || zeros == Zeros::kWritten) {
    w.key("samples");
    w.value(t.samples);
  }
  seconds("cpu_gc_s", t.gc_ns);
  seconds("await_s", t.await_ns);
}

void write_row_figures(JsonWriter& w, const Times& t, bool memory) {
  write_times(w, t, Zeros::kLeftOut);
  if (memory) write_memory_sums(w, t, Zeros::kLeftOut);
}

void write_meta(JsonWriter& w, const MetaMembers& meta) {
  for (const auto& [key, value] : meta) {
    w.key(key);
    w.raw(value);  // one whole JSON value, encoded by Python
  }
}

// `visible[i]` is how many of entry i's frames (from the innermost) are written: the
// profiler's own frames around the program are left out.
void write_stacks(JsonWriter& w, const StackTable& stacks, const std::vector<CodeInfo>& codes,
                  const std::vector<uint16_t>& visible, bool memory,
                  const NativeBreakdown& native) {
  // Frame table: one entry per distinct (code, line), plus the truncation marker.
  std::map<std::pair<uint32_t, int32_t>, size_t> frame_index;
  std::vector<std::pair<uint32_t, int32_t>> frame_list;
  std::vector<std::pair<const StackEntry*, size_t>> order;  // entry, frames written
  for (size_t i = 0; i < stacks.entries().size(); ++i) {
    const StackEntry& e = stacks.entries()[i];
    const size_t depth = i < visible.size() ? visible[i] : e.frames.size();
    if (depth == 0) continue;
    order.emplace_back(&e, depth);
    for (size_t k = 0; k < depth; ++k) {
      const FrameKey& f = e.frames[k];
      auto [it, inserted] = frame_index.emplace(std::make_pair(f.code_id, f.line), 0);
      if (inserted) {
        it->second = frame_list.size();
        frame_list.emplace_back(f.code_id, f.line);
      }
    }
  }
  const size_t truncated_marker = frame_list.size();
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first->times.cpu_ns() + a.first->times.wait_ns + a.first->times.await_ns >
           b.first->times.cpu_ns() + b.first->times.wait_ns + b.first->times.await_ns;
  });

  // Frames name their file by its index in frame_files (schema 3): a file's path is
  // written once, not once per line of it that some stack passed through.
  std::unordered_map<std::string_view, size_t> file_index;
  std::vector<std::string_view> file_list;
  const auto index_of = [&](std::string_view file) {
    auto [it, inserted] = file_index.emplace(file, file_list.size());
    if (inserted) file_list.push_back(file);
    return it->second;
  };
  std::vector<size_t> frame_file;
  frame_file.reserve(frame_list.size() + 1);
  for (const auto& [code_id, line] : frame_list) {
    // Views of the codes' own strings (a ternary with a literal would make a temporary).
    const std::string_view file =
        code_id < codes.size() ? std::string_view(codes[code_id].file) : "<unknown>";
    frame_file.push_back(index_of(file));
  }
  frame_file.push_back(index_of("<truncated>"));
  w.key("frame_files");
  w.begin_array();
  for (const std::string_view file : file_list) w.value(file);
  w.end_array();

  w.key("frames");
  w.begin_array();
  for (size_t i = 0; i < frame_list.size(); ++i) {
    const auto [code_id, line] = frame_list[i];
    w.begin_object();
    w.key("file");
    w.value(static_cast<uint64_t>(frame_file[i]));
    w.key("function");
    w.value(code_id < codes.size() ? codes[code_id].name : std::string("<unknown>"));
    w.key("lineno");
    w.value(static_cast<int64_t>(line));
    w.end_object();
  }
  w.begin_object();
  w.key("file");
  w.value(static_cast<uint64_t>(frame_file.back()));
  w.key("function");
  w.value("<truncated>");
  w.key("lineno");
  w.value(0);
  w.end_object();
  w.end_array();

  w.key("stacks");
  w.begin_array();
  for (const auto& [e, depth] : order) {
    w.begin_object();
    w.key("frames");
    w.begin_array();
    if (e->truncated) w.value(static_cast<uint64_t>(truncated_marker));
    for (size_t k = depth; k-- > 0;) {
      const FrameKey& f = e->frames[k];
      w.value(static_cast<uint64_t>(frame_index.at({f.code_id, f.line})));
    }
    w.end_array();
    write_row_figures(w, e->times, memory);
    native.write_stack(w, static_cast<size_t>(e - stacks.entries().data()));
    w.end_object();
  }
  w.end_array();
}

}  // namespace

std::string ProfileModel::to_json(
    const MetaMembers& meta, const RunInfo& run,
    const std::unordered_map<std::string, std::vector<std::string>>& sources,
    const StackTable& stacks, const std::vector<CodeInfo>& codes) const {
  JsonWriter w;
  w.begin_object();
  w.key("format");
  w.value(kFormatMagic);
  w.key("schema_version");
  w.value(kSchemaVersion);
  write_meta(w, meta);
  w.key("elapsed_s");
  w.value(run.elapsed_s);
  w.key("interval_s");
  w.value(run.interval_s);
  w.key("dropped_samples");
  w.value(run.dropped_samples);
  write_times(w, total_);
  w.key("memory_profiled");
  w.value(memory_);
  if (memory_) write_run_memory(w, run);
  gpu_.write_run(w);
  w.key("unattributed");
  w.begin_object();
  write_times(w, unattributed_);
  w.end_object();

  w.key("threads");
  w.begin_array();
  for (const ThreadInfo& t : threads_) {
    w.begin_object();
    w.key("tid");
    w.value(static_cast<int64_t>(t.tid));
    w.key("name");
    if (t.name.empty()) {
      w.null();
    } else {
      w.value(t.name);
    }
    write_row_figures(w, t.times, memory_);
    w.end_object();
  }
  w.end_array();

  w.key("files");
  w.begin_object();
  for (const auto& [path, file] : files_) {
    w.key(path);
    w.begin_object();
    write_times(w, file.times);
    if (memory_) {
      write_memory_sums(w, file.times);
      write_leaks(w, file, run.elapsed_s);
    }
    const auto src = sources.find(path);
    w.key("lines");
    w.begin_array();
    for (const auto& [lineno, t] : file.lines) {
      w.begin_object();
      w.key("lineno");
      w.value(static_cast<int64_t>(lineno));
      w.key("source");
      const bool have =
          src != sources.end() && lineno >= 1 && static_cast<size_t>(lineno) <= src->second.size();
      w.value(have ? src->second[static_cast<size_t>(lineno) - 1] : std::string());
      write_times(w, t);
      native_.write_line(w, path, lineno);
      if (memory_) {
        const auto m = file.line_memory.find(lineno);
        write_memory_members(w, t, m != file.line_memory.end() ? m->second : MemoryExtras{},
                             total_.alloc_bytes, run.elapsed_s);
      }
      gpu_.write_line(w, path, lineno);
      w.end_object();
    }
    w.end_array();
    w.key("functions");
    w.begin_array();
    for (const auto& [key, t] : file.functions) {
      w.begin_object();
      w.key("name");
      w.value(key.second);
      w.key("first_lineno");
      w.value(static_cast<int64_t>(key.first));
      write_times(w, t);
      if (memory_) {
        const auto m = file.function_memory.find(key);
        write_memory_members(w, t, m != file.function_memory.end() ? m->second : MemoryExtras{},
                             total_.alloc_bytes, run.elapsed_s);
      }
      gpu_.write_function(w, path, key);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_object();

  if (!native_.empty()) native_.write_run(w);
  if (!tasks_.empty()) {
    w.key("tasks");
    w.begin_array();
    for (const TaskAwait& t : tasks_) {
      w.begin_object();
      w.key("name");
      w.value(t.name);
      w.key("coroutine");
      w.value(t.coroutine);
      w.key("await_s");
      w.value(ns_to_s(t.await_ns));
      w.end_object();
    }
    w.end_array();
  }
  write_stacks(w, stacks, codes, visible_depth_, memory_, native_);
  w.end_object();
  return w.take();
}

void ProfileModel::attach_tasks(std::vector<TaskAwait> tasks) {
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const TaskAwait& a, const TaskAwait& b) { return a.await_ns > b.await_ns; });
  tasks_ = std::move(tasks);
}

void ProfileModel::attach_native(const NativeCosts& costs, std::vector<NativeFunction> functions,
                                 const std::vector<CodeInfo>& codes) {
  native_ = NativeBreakdown::build(costs, std::move(functions), [&](size_t stack) {
    NativeBreakdown::StackLine where;
    if (stack < stack_hits_.size() && stack_hits_[stack].code_id < codes.size()) {
      where.attributed = true;
      where.file = codes[stack_hits_[stack].code_id].file;
      where.line = stack_hits_[stack].line;
    }
    return where;
  });
}

void ProfileModel::write_run_memory(JsonWriter& w, const RunInfo& run) const {
  w.key("memory_window_mb");
  w.value(run.memory.window_mb);
  w.key("copy_window_mb");
  w.value(run.memory.copy_window_mb);
  w.key("dropped_memory_samples");
  w.value(run.memory.dropped_samples);
  w.key("mem_alloc_mb");
  write_mb(w, static_cast<double>(total_.alloc_bytes));
  w.key("mem_free_mb");
  write_mb(w, freed_bytes_);
  w.key("mem_python_fraction");
  w.value(total_.alloc_bytes > 0 ? static_cast<double>(total_.alloc_python_bytes) /
                                       static_cast<double>(total_.alloc_bytes)
                                 : 0.0);
  w.key("mem_samples");
  w.value(total_.mem_samples);
  const double copy_mb = bytes_to_mb(static_cast<double>(total_.copy_bytes));
  w.key("copy_mb");
  write_mb(w, static_cast<double>(total_.copy_bytes));
  w.key("copy_mb_s");
  w.value(run.elapsed_s > 0 ? copy_mb / run.elapsed_s : 0.0);
  write_cuda_copies(w, total_);
  w.key("max_footprint_mb");
  write_mb(w, max_footprint_bytes_);
  w.key("max_footprint_file");
  if (max_footprint_file_.empty()) {
    w.null();
  } else {
    w.value(max_footprint_file_);
  }
  w.key("max_footprint_lineno");
  if (max_footprint_file_.empty()) {
    w.null();
  } else {
    w.value(static_cast<int64_t>(max_footprint_line_));
  }
  w.key("footprint_timeline");
  write_timeline(w, footprint_timeline_);
  w.key("native_thread_alloc_mb");
  write_mb(w, native_thread_alloc_bytes_);
}

void ProfileModel::write_leaks(JsonWriter& w, const FileStats& file, double /*elapsed_s*/) const {
  struct Leak {
    int lineno;
    double likelihood;
    double rate_mb_s;
  };
  // The verdict is the line's own (leak_verdict in memory_stats.hpp): live bytes that keep
  // growing and are not freed by the end, whatever the rest of the run did.
  std::vector<Leak> leaks;
  for (const auto& [lineno, m] : file.line_memory) {
    if (!m.leak.leak) continue;
    leaks.push_back({lineno, m.leak.confidence, bytes_to_mb(m.leak.rate_bytes_s)});
  }
  std::stable_sort(leaks.begin(), leaks.end(),
                   [](const Leak& a, const Leak& b) { return a.likelihood > b.likelihood; });
  w.key("leaks");
  w.begin_array();
  for (const Leak& l : leaks) {
    w.begin_object();
    w.key("lineno");
    w.value(static_cast<int64_t>(l.lineno));
    w.key("likelihood");
    w.value(l.likelihood);
    w.key("rate_mb_s");
    w.value(l.rate_mb_s);
    w.end_object();
  }
  w.end_array();
}

}  // namespace spyglass
