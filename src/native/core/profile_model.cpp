#include "profile_model.hpp"

#include <algorithm>

#include "json_writer.hpp"

namespace spyglass {

double ns_to_s(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

ProfileModel ProfileModel::build(const StackTable& stacks, const std::vector<CodeInfo>& codes,
                                 const FileFilter& filter, std::vector<ThreadInfo> threads) {
  ProfileModel model;
  std::vector<int8_t> profiled(codes.size(), -1);  // memoised filter verdict per code
  auto is_profiled = [&](uint32_t id) {
    if (id >= codes.size()) return false;
    if (profiled[id] < 0) {
      profiled[id] = filter.is_profiled(codes[id].file, codes[id].first_lineno) ? 1 : 0;
    }
    return profiled[id] == 1;
  };
  model.visible_depth_.reserve(stacks.entries().size());
  for (const StackEntry& e : stacks.entries()) {
    // Leave out the frames that lead from the process's start into the program through the
    // profiler (console script, launcher, runpy): from the root through the first run of
    // internal frames, when that run starts near the root. At least the innermost frame
    // stays, so that every sample with a Python frame has a stack.
    const auto internal = [&](size_t k) {
      return e.frames[k].code_id < codes.size() &&
             filter.is_internal(codes[e.frames[k].code_id].file);
    };
    size_t depth = e.frames.size();
    constexpr size_t kLauncherReach = 4;  // frames between the root and our launcher
    for (size_t from_root = 0; from_root < kLauncherReach && from_root < depth; ++from_root) {
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
    if (hit == nullptr) {
      model.unattributed_ += e.times;
      continue;
    }
    const CodeInfo& code = codes[hit->code_id];
    FileStats& file = model.files_[code.file];
    file.times += e.times;
    file.lines[hit->line] += e.times;
    file.functions[{code.first_lineno, code.name}] += e.times;
  }
  std::sort(threads.begin(), threads.end(),
            [](const ThreadInfo& a, const ThreadInfo& b) { return a.tid < b.tid; });
  model.threads_ = std::move(threads);
  return model;
}

namespace {

void write_times(JsonWriter& w, const Times& t) {
  w.key("cpu_python_s");
  w.value(ns_to_s(t.python_ns));
  w.key("cpu_native_s");
  w.value(ns_to_s(t.native_ns));
  w.key("cpu_system_s");
  w.value(ns_to_s(t.system_ns));
  w.key("wait_s");
  w.value(ns_to_s(t.wait_ns));
  w.key("samples");
  w.value(t.samples);
}

void write_meta(JsonWriter& w, const std::string& meta_members) {
  // Splice the launcher's object members in after ours: strip its braces.
  const size_t open = meta_members.find('{');
  const size_t close = meta_members.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close <= open) return;
  std::string inner = meta_members.substr(open + 1, close - open - 1);
  if (inner.find_first_not_of(" \t\r\n") == std::string::npos) return;
  w.raw(inner);  // members of an object are a valid continuation after our own
}

// `visible[i]` is how many of entry i's frames (from the innermost) are written: the
// profiler's own frames around the program are left out.
void write_stacks(JsonWriter& w, const StackTable& stacks, const std::vector<CodeInfo>& codes,
                  const std::vector<uint16_t>& visible) {
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
    return a.first->times.cpu_ns() + a.first->times.wait_ns >
           b.first->times.cpu_ns() + b.first->times.wait_ns;
  });

  w.key("frames");
  w.begin_array();
  for (const auto& [code_id, line] : frame_list) {
    w.begin_object();
    w.key("file");
    w.value(code_id < codes.size() ? codes[code_id].file : std::string("<unknown>"));
    w.key("function");
    w.value(code_id < codes.size() ? codes[code_id].name : std::string("<unknown>"));
    w.key("lineno");
    w.value(static_cast<int64_t>(line));
    w.end_object();
  }
  w.begin_object();
  w.key("file");
  w.value("<truncated>");
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
    write_times(w, e->times);
    w.end_object();
  }
  w.end_array();
}

}  // namespace

std::string ProfileModel::to_json(
    const std::string& meta_members, const RunInfo& run,
    const std::unordered_map<std::string, std::vector<std::string>>& sources,
    const StackTable& stacks, const std::vector<CodeInfo>& codes) const {
  JsonWriter w;
  w.begin_object();
  w.key("format");
  w.value(kFormatMagic);
  w.key("schema_version");
  w.value(kSchemaVersion);
  write_meta(w, meta_members);
  w.key("elapsed_s");
  w.value(run.elapsed_s);
  w.key("interval_s");
  w.value(run.interval_s);
  w.key("dropped_samples");
  w.value(run.dropped_samples);
  write_times(w, total_);
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
    write_times(w, t.times);
    w.end_object();
  }
  w.end_array();

  w.key("files");
  w.begin_object();
  for (const auto& [path, file] : files_) {
    w.key(path);
    w.begin_object();
    write_times(w, file.times);
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
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_object();

  write_stacks(w, stacks, codes, visible_depth_);
  w.end_object();
  return w.take();
}

}  // namespace spyglass
