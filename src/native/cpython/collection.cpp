#define Py_BUILD_CORE 1
#include "collection.hpp"

#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "../core/memory_stats.hpp"
#include "../platform/clock.hpp"
#include "../platform/code_ranges.hpp"
#include "../shim/memory_hooks.hpp"
#include "call_sites.hpp"
#include "compat/asyncio.hpp"

namespace spyglass::cpython {

void Collection::reset(const FilterConfig& scope) {
  stacks_.clear();
  native_by_pc_.clear();
  symbols_.clear();
  codes_.clear();
  thread_times_.clear();
  scope_ = std::make_unique<FileFilter>(scope);
  profiled_code_.clear();
  internal_code_.clear();
  import_code_.clear();
  code_package_.clear();
  wanted_call_sites_.clear();
  call_site_copies_.clear();
  library_waits_.clear();
  visits_.clear();
  outer_seen_.clear();
  outer_by_stack_.clear();
  event_loop_seen_ = false;
  task_await_.clear();
}

namespace {

// An event loop's own code: asyncio's loop (its Python frames sit under every task it
// runs and around its wait for I/O) or uvloop's module.
bool is_event_loop_code(const CodeInfo& info) {
  const std::string_view file = info.file;
  if (file.find("uvloop") != std::string_view::npos) return true;
  if (file.find("asyncio") == std::string_view::npos) return false;
  return info.name.find("run_forever") != std::string::npos ||
         info.name.find("run_until_complete") != std::string::npos ||
         info.name.find("_run_once") != std::string::npos;
}

}  // namespace

void Collection::open_journal(const std::string& path, const JournalHeader& header) {
  if (path.empty()) return;
  {
    std::lock_guard<std::mutex> lock(objects_mutex_);
    objects_pending_ = !objects_.empty();  // a new journal (a forked child's) needs them
  }
  (void)journal_.open(path, header);
}

void Collection::journal_tick(const JournalTick& tick, const MemoryStats* memory, bool last) {
  if (!journal_.is_open()) return;
  const shim::PauseThisThread paused;  // the journal's buffers are not the program's
  std::lock_guard<std::mutex> lock(objects_mutex_);
  if (objects_pending_) {
    journal_.native_objects(objects_);
    objects_pending_ = false;
  }
  journal_.tick(tick);
  if (!last && journal_.wants_compaction()) {
    journal_.compact(JournalView{stacks_, codes_.infos(), thread_times_, memory, tick,
                                 &native_by_pc_, &objects_});
  }
}

void Collection::resolve_frames(const RawFrame* frames, uint16_t depth, FrameKey* keys) {
  for (uint16_t i = 0; i < depth; ++i) {
    auto* code = reinterpret_cast<PyCodeObject*>(frames[i].code);
    if (codes_.cached_frame(code, frames[i].instr_offset, &keys[i])) continue;
    const size_t known = codes_.infos().size();
    const uint32_t id = codes_.id_for(code);
    // A code object may be gone by the time the journal is read: name it on first sight.
    if (id >= known && journal_.is_open()) journal_.code(id, codes_.info(id, code));
    if (id >= known && !event_loop_seen_) {
      event_loop_seen_ = compat::is_async_code(code) || is_event_loop_code(codes_.info(id, code));
    }
    // A caller's frame sits on a call: its code's table is wanted, before a sample finds
    // the code itself inside a call.
    if (id >= known && i > 0 && track_call_sites_) wanted_call_sites_.insert(code);
    keys[i] = FrameKey{id, codes_.line_for(id, code, frames[i].instr_offset)};
    codes_.cache_frame(code, frames[i].instr_offset, keys[i]);
  }
}

size_t Collection::add_stack(const FrameKey* keys, uint16_t depth, bool truncated, int32_t tid,
                             const Times& t) {
  const size_t known = stacks_.size();
  const size_t index = stacks_.add(keys, depth, truncated, t);
  if (index >= known && journal_.is_open()) journal_.stack(index, stacks_.entries()[index]);
  note_times(index, tid, t);
  return index;
}

void Collection::note_times(size_t index, int32_t tid, const Times& t) {
  // A stack only named, for figures charged to it later (where a young thread was found
  // blocked: kind_waits.hpp), adds nothing to its thread nor to the journal.
  if (t.empty()) return;
  thread_times_[tid] += t;
  if (keep_recent_ && (t.cpu_ns() > 0 || t.wait_ns > 0)) {
    recent_.push_back({index, t.cpu_ns(), t.wait_ns});
  }
  if (journal_.is_open()) journal_.times(index, tid, t);
}

bool Collection::resolve_sample(const SampleRecord& rec, FrameKey* keys) {
  resolve_frames(rec.frames, rec.depth, keys);
  if (rec.depth > 0 &&
      is_internal_code(keys[0].code_id, reinterpret_cast<PyCodeObject*>(rec.frames[0].code))) {
    return false;
  }
  if (rec.wants_call_sites && rec.depth > 0) {
    wanted_call_sites_.insert(reinterpret_cast<PyCodeObject*>(rec.frames[0].code));
  }
  if (keep_visits_) note_visit(rec, keys);
  return true;
}

void Collection::note_visit(const SampleRecord& rec, const FrameKey* keys) {
  // An await sample is a suspended task's stack, not where its thread is.
  if (rec.kind == SampleKind::kAwait) return;
  uint64_t line = kNoLineKey;
  for (uint16_t i = 0; i < rec.depth; ++i) {
    if (is_profiled_code(keys[i].code_id, reinterpret_cast<PyCodeObject*>(rec.frames[i].code))) {
      line = line_key(keys[i].code_id, keys[i].line);
      break;
    }
  }
  visits_.visited(rec.tid, rec.t_ns, line);
  if (line == kNoLineKey) return;
  const uint32_t outer = outer_program_code(rec.frames, keys, rec.depth);
  if (outer == kNoCode) return;
  uint64_t& seen = outer_seen_[outer];
  seen = std::max(seen, rec.t_ns);
}

uint32_t Collection::outer_program_code(const RawFrame* frames, const FrameKey* keys,
                                        uint16_t depth) {
  for (uint16_t i = depth; i > 0; --i) {
    const FrameKey& key = keys[i - 1];
    auto* code = reinterpret_cast<PyCodeObject*>(frames[i - 1].code);
    if (!is_profiled_code(key.code_id, code)) continue;
    // A function a framework calls (a test) ends its work when it returns. A module's
    // code does not: a statement typed at the prompt, or a notebook's cell, builds what
    // the ones after it use, and a list built by one was called a leak.
    return codes_.info(key.code_id, code).name == "<module>" ? kNoCode : key.code_id;
  }
  return kNoCode;
}

Times Collection::sample_times(const SampleRecord& rec, bool with_cpu) {
  Times t;
  const uint64_t user = with_cpu ? rec.user_ns : 0;
  if (rec.kind == SampleKind::kCpu) {
    t.samples = 1;
    t.system_ns = with_cpu ? rec.system_ns : 0;
    (rec.cpu_class == CpuClass::kPython ? t.python_ns : t.native_ns) = user;
    if (rec.in_gc) t.gc_ns = user;
  } else if (rec.kind == SampleKind::kAwait) {
    t.await_ns = rec.wait_ns;
  } else {
    t.wait_ns = rec.wait_ns;
  }
  return t;
}

size_t Collection::add_sample(const SampleRecord& rec, bool with_cpu) {
  FrameKey keys[kMaxStackDepth];
  if (!resolve_sample(rec, keys)) return kNotAdded;
  bool truncated = rec.truncated;
  const uint16_t depth = lent_depth(rec, keys, &truncated);
  const size_t index = add_stack(keys, depth, truncated, rec.tid, sample_times(rec, with_cpu));
  // The breakdown covers the native share only: bytecode time stays the line's own.
  add_native(index, native_chain(rec), NativeCost{with_cpu ? rec.user_ns : 0, 1});
  return index;
}

size_t Collection::name_sample(const SampleRecord& rec) {
  FrameKey keys[kMaxStackDepth];
  if (!resolve_sample(rec, keys)) return kNotAdded;
  bool truncated = rec.truncated;
  const uint16_t depth = lent_depth(rec, keys, &truncated);
  return add_stack(keys, depth, truncated, rec.tid, Times{});
}

size_t Collection::name_stack_below_own(const SampleRecord& rec) {
  FrameKey keys[kMaxStackDepth];
  resolve_frames(rec.frames, rec.depth, keys);
  uint16_t own = 0;
  while (own < rec.depth && is_internal_code(keys[own].code_id, reinterpret_cast<PyCodeObject*>(
                                                                    rec.frames[own].code))) {
    ++own;
  }
  return add_stack(keys + own, static_cast<uint16_t>(rec.depth - own), rec.truncated, rec.tid,
                   Times{});
}

bool Collection::has_program_frame(const SampleRecord& rec) {
  if (!scope_) return false;
  for (uint16_t i = 0; i < rec.depth; ++i) {
    auto* code = reinterpret_cast<PyCodeObject*>(rec.frames[i].code);
    if (scope_->is_profiled_file(codes_.info(codes_.id_for(code), code).file)) return true;
  }
  return false;
}

uint16_t Collection::lent_depth(const SampleRecord& rec, FrameKey* keys, bool* truncated) {
  // A CPU sample only: a library thread's wait is its own (its caller's wait is counted).
  if (rec.kind != SampleKind::kCpu) return rec.depth;
  const uint64_t t_ns = rec.t_ns != 0 ? rec.t_ns : platform::monotonic_ns();
  return lend_to_waiting_caller(rec.frames, keys, rec.depth, rec.tid, t_ns, nullptr, truncated);
}

void Collection::add_named(size_t index, const SampleRecord& rec) {
  add_to_stack(index, rec.tid, sample_times(rec, /*with_cpu=*/true));
  add_native(index, native_chain(rec), NativeCost{rec.user_ns, 1});
}

void Collection::add_native(size_t index, const std::vector<uintptr_t>& chain,
                            const NativeCost& cost) {
  if (chain.empty()) return;
  native_by_pc_[index][chain] += cost;
  if (journal_.is_open()) journal_.native(index, chain, cost);
}

void Collection::add_to_stack(size_t index, int32_t tid, const Times& t) {
  stacks_.add_to(index, t);
  note_times(index, tid, t);
}

void Collection::add_native_cost(size_t index, const std::vector<uintptr_t>& chain, uint64_t ns) {
  if (ns > 0) add_native(index, chain, NativeCost{ns, 0});
}

void Collection::add_task_await(const std::string& name, const std::string& coroutine,
                                uint64_t ns) {
  auto key = std::make_pair(name, coroutine);
  if (task_await_.size() >= kMaxTasks && task_await_.count(key) == 0) {
    key = {"[other]", ""};
  }
  task_await_[key] += ns;
}

std::vector<TaskAwait> Collection::tasks() const {
  std::vector<TaskAwait> out;
  out.reserve(task_await_.size());
  for (const auto& [key, ns] : task_await_) out.push_back(TaskAwait{key.first, key.second, ns});
  return out;
}

void Collection::offer_native_objects(std::vector<NativeObject> objects) {
  std::lock_guard<std::mutex> lock(objects_mutex_);
  // Kept whole and in first-seen order: an object unloaded since still names old samples.
  for (NativeObject& o : objects) {
    bool known = false;
    for (const NativeObject& k : objects_) known = known || (k.base == o.base && k.path == o.path);
    if (!known) {
      objects_.push_back(std::move(o));
      objects_pending_ = true;
    }
  }
}

NativeCosts name_native_chains(const RawNativeChains& raw, platform::NativeSymbolizer& symbols) {
  NativeCosts costs;
  NativeChain names;
  for (const auto& [stack, by_chain] : raw) {
    for (const auto& [chain, cost] : by_chain) {
      names.clear();
      names.push_back(symbols.resolve(chain[0]));
      // A return address is named by the call before it: a call can end its function.
      for (size_t i = 1; i < chain.size(); ++i) names.push_back(symbols.resolve(chain[i] - 1));
      costs.add(stack, names, cost);
    }
  }
  return costs;
}

std::vector<NativeFunction> native_function_names(const platform::NativeSymbolizer& symbols) {
  std::vector<NativeFunction> out;
  out.reserve(symbols.size());
  for (uint32_t id = 0; id < symbols.size(); ++id) {
    const platform::NativeSymbol& s = symbols.symbol(id);
    out.push_back(NativeFunction{platform::demangle(s.name), s.library});
  }
  return out;
}

NativeCosts Collection::native_costs() const { return name_native_chains(native_by_pc_, symbols_); }

std::vector<NativeFunction> Collection::native_functions() const {
  return native_function_names(symbols_);
}

void Collection::build_wanted_call_sites(const BytecodeFormat& format) {
  for (PyCodeObject* code : wanted_call_sites_) {
    build_call_sites(code, format);
    auto copy = call_site_copies_.find(code);
    if (copy != call_site_copies_.end() && !copy->second.built) {
      copy->second.table = call_site_table(code);
      copy->second.built = true;
    }
  }
  wanted_call_sites_.clear();
}

bool Collection::is_profiled_code(uint32_t id, PyCodeObject* code) {
  if (id >= profiled_code_.size()) profiled_code_.resize(id + 1, -1);
  if (profiled_code_[id] < 0) {
    const CodeInfo& info = codes_.info(id, code);
    profiled_code_[id] = scope_ && scope_->is_profiled(info.file, info.first_lineno);
  }
  return profiled_code_[id] == 1;
}

bool Collection::is_internal_code(uint32_t id, PyCodeObject* code) {
  if (id >= internal_code_.size()) internal_code_.resize(id + 1, -1);
  if (internal_code_[id] < 0) {
    internal_code_[id] = scope_ && scope_->is_internal(codes_.info(id, code).file) ? 1 : 0;
  }
  return internal_code_[id] == 1;
}

bool Collection::is_import_code(uint32_t id, PyCodeObject* code) {
  if (id >= import_code_.size()) import_code_.resize(id + 1, -1);
  if (import_code_[id] < 0) {
    const std::string& file = codes_.info(id, code).file;
    import_code_[id] = file.rfind("<frozen importlib._bootstrap", 0) == 0 ||
                       file.find("/importlib/_bootstrap") != std::string::npos;
  }
  return import_code_[id] == 1;
}

std::vector<ThreadInfo> Collection::threads(const std::map<int32_t, std::string>& names) const {
  std::vector<ThreadInfo> out;
  for (const auto& [tid, t] : thread_times_) {
    auto it = names.find(tid);
    out.push_back(ThreadInfo{tid, it != names.end() ? it->second : std::string(), t});
  }
  return out;
}

uint64_t Collection::code_package(uint32_t id, PyCodeObject* code) {
  if (id >= code_package_.size()) code_package_.resize(id + 1, kUnknownPackage);
  if (code_package_[id] == kUnknownPackage) {
    code_package_[id] = platform::installed_package(codes_.info(id, code).file);
  }
  return code_package_[id];
}

Collection::ProgramCall Collection::program_call(const SampleRecord& rec) {
  ProgramCall call;
  for (uint16_t i = 0; i < rec.depth; ++i) {
    auto* code = reinterpret_cast<PyCodeObject*>(rec.frames[i].code);
    const uint32_t id = codes_.id_for(code);
    if (!is_profiled_code(id, code)) continue;
    call.line = line_key(id, codes_.line_for(id, code, rec.frames[i].instr_offset));
    // Innermost, the program's frame is blocked in its own code (a callback a library
    // called, asleep): a wait of the program's, not one on a library.
    if (i > 0) {
      auto* callee = reinterpret_cast<PyCodeObject*>(rec.frames[i - 1].code);
      call.package = code_package(codes_.id_for(callee), callee);
    }
    break;
  }
  return call;
}

size_t Collection::library_packages(const RawFrame* frames, const FrameKey* keys, uint16_t depth,
                                    uint64_t* packages) {
  size_t count = 0;
  for (uint16_t i = 0; i < depth; ++i) {
    auto* code = reinterpret_cast<PyCodeObject*>(frames[i].code);
    if (is_profiled_code(keys[i].code_id, code)) return kProgramsStack;
    if (is_internal_code(keys[i].code_id, code)) continue;  // installed, but ours
    const uint64_t package = code_package(keys[i].code_id, code);
    if (package != 0) packages[count++] = package;
  }
  return count;
}

bool Collection::lendable(const RawFrame* frames, const FrameKey* keys, uint16_t depth,
                          int32_t tid) {
  // Not the main thread: no library hands it work (between tests, pytest's own code runs
  // there with none of the program's frames).
  if (depth == 0 || library_waits_.window() == 0 || tid == getpid()) return false;
  uint64_t packages[kMaxStackDepth];
  const size_t count = library_packages(frames, keys, depth, packages);
  return count != kProgramsStack && count > 0;
}

uint16_t Collection::lend_to_waiting_caller(const RawFrame* frames, FrameKey* keys, uint16_t depth,
                                            int32_t tid, uint64_t t_ns, uint64_t* line,
                                            bool* truncated, int32_t* caller_tid) {
  if (depth == 0 || library_waits_.empty()) return depth;
  uint64_t packages[kMaxStackDepth];
  const size_t count = library_packages(frames, keys, depth, packages);
  if (count == kProgramsStack) return depth;
  auto of_package = [&packages, count](uint64_t package) {
    return std::find(packages, packages + count, package) != packages + count;
  };
  const LibraryWaits::Noted* caller =
      count == 0
          ? nullptr
          : library_waits_.during(t_ns, platform::monotonic_ns(), of_package, tid, ThreadProbe{});
  if (caller == nullptr || caller->stack >= stacks_.size()) return depth;
  // The caller's frames whole (its line of the program is near its outer end), under as
  // many of the thread's own innermost frames as leave room.
  const StackEntry& under = stacks_.entries()[caller->stack];
  const size_t taken = std::min<size_t>(under.frames.size(), kMaxStackDepth);
  auto grafted = static_cast<uint16_t>(std::min<size_t>(depth, kMaxStackDepth - taken));
  *truncated = *truncated || under.truncated || grafted < depth || taken < under.frames.size();
  for (size_t k = under.frames.size() - taken; k < under.frames.size(); ++k) {
    keys[grafted++] = under.frames[k];
  }
  if (line != nullptr) *line = caller->line;
  if (caller_tid != nullptr) *caller_tid = caller->tid;
  return grafted;
}

}  // namespace spyglass::cpython
