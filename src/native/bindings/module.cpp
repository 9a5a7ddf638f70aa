// The extension module: a thin layer that converts Python values and calls into the core.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../core/journal.hpp"
#include "../core/limits.hpp"
#include "../core/profile_model.hpp"
#include "../core/sample.hpp"
#include "../cpython/call_sites.hpp"
#include "../cpython/collector.hpp"
#include "../cpython/cpu_engine.hpp"
#include "../cpython/handler_timing.hpp"
#include "../cpython/kept_thread_state.hpp"
#include "../cpython/sampling_state.hpp"
#include "../platform/exit_status.hpp"
#include "../platform/forwarded_signals.hpp"
#include "../platform/perf_clock.hpp"
#include "../platform/signals.hpp"
#include "../platform/termination.hpp"
#include "../shim/memory_hooks.hpp"
#include "thread_entry.hpp"

namespace py = pybind11;

namespace spyglass {
namespace {

// One profiling session: the collector, then the model built from what it collected.
class Profiler {
 public:
  void start(double interval_s, std::vector<int> call_opcodes, std::vector<uint32_t> bytecode_flags,
             bool memory, uint64_t memory_window, uint64_t copy_window,
             std::optional<FilterConfig> scope, std::string journal_path, MetaMembers journal_meta,
             bool gpu) {
    if (!(interval_s >= ns_to_s(kMinIntervalNs) && interval_s <= ns_to_s(kMaxIntervalNs))) {
      std::ostringstream message;
      message << "interval must be between " << ns_to_s(kMinIntervalNs) << " and "
              << ns_to_s(kMaxIntervalNs) << " seconds";
      throw py::value_error(message.str());
    }
    if (memory &&
        (memory_window < kMinMemoryWindowBytes || memory_window > kMaxMemoryWindowBytes)) {
      std::ostringstream message;
      static_assert(kMinMemoryWindowBytes % 1024 == 0 && kMaxMemoryWindowBytes % (1ull << 40) == 0);
      message << "the memory window must be between " << (kMinMemoryWindowBytes >> 10)
              << " KiB and " << (kMaxMemoryWindowBytes >> 40) << " TiB";
      throw py::value_error(message.str());
    }
    model_.reset();
    cpython::CollectorOptions options;
    options.interval_ns = static_cast<uint64_t>(interval_s * 1e9);
    options.call_opcodes = std::move(call_opcodes);
    if (!bytecode_flags.empty()) {
      options.bytecode = cpython::bytecode_format(std::move(bytecode_flags));
    }
    options.memory = memory;
    options.memory_options.window_bytes = memory_window;
    options.memory_options.copy_window_bytes =
        copy_window != 0 ? copy_window : kDefaultCopyWindowBytes;
    if (scope) options.scope = std::move(*scope);
    options.journal_path = std::move(journal_path);
    options.journal_meta = std::move(journal_meta);
    options.gpu = gpu;
    collector_.start(options);
  }

  void stop() { collector_.stop(); }
  bool leaks_suspected() { return collector_.leaks_suspected(); }
  bool running() const { return collector_.running(); }
  bool abandoned() const { return collector_.abandoned(); }

  // Attributes the collected samples; returns the profiled files, whose source text
  // to_json() then needs.
  std::vector<std::string> build(FilterConfig filter, const std::map<int32_t, std::string>& names) {
    if (collector_.running()) throw std::runtime_error("stop the profiler before building");
    const cpython::Collection& c = collector_.collection();
    model_ = ProfileModel::build(c.stacks(), c.codes().infos(), FileFilter(std::move(filter)),
                                 c.threads(names), collector_.memory(), collector_.gpu());
    const NativeCosts native = c.native_costs();  // before native_functions(): it names them
    model_->attach_native(native, c.native_functions(), c.codes().infos());
    model_->attach_tasks(c.tasks());
    std::vector<std::string> files;
    for (const auto& [path, stats] : model_->files()) files.push_back(path);
    return files;
  }

  std::string to_json(const MetaMembers& meta,
                      const std::unordered_map<std::string, std::vector<std::string>>& sources) {
    if (!model_) throw std::runtime_error("build() the profile before serialising it");
    const cpython::Collection& c = collector_.collection();
    return model_->to_json(meta, collector_.describe(), sources, c.stacks(), c.codes().infos());
  }

  double started_at() const { return collector_.started_at(); }
  double elapsed_s() const { return collector_.elapsed_s(); }
  bool gpu_profiled() const { return collector_.gpu() != nullptr; }

 private:
  static double ns_to_s(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

  cpython::Collector collector_;
  std::optional<ProfileModel> model_;
};

}  // namespace
}  // namespace spyglass

PYBIND11_MODULE(_native, m) {
  using spyglass::FilterConfig;
  using spyglass::Profiler;
  m.doc() = "spyglass's native core: the samplers and the profile model.";
  m.attr("VERSION") = SPYGLASS_VERSION;
  m.attr("SCHEMA_VERSION") = spyglass::kSchemaVersion;
  m.attr("FORMAT") = spyglass::kFormatMagic;
  m.attr("MAX_STACK_DEPTH") = spyglass::kMaxStackDepth;
  // What a user may set, and what a profile is bounded by (core/limits.hpp).
  m.attr("DEFAULT_INTERVAL_S") = static_cast<double>(spyglass::kDefaultIntervalNs) / 1e9;
  m.attr("MIN_INTERVAL_S") = static_cast<double>(spyglass::kMinIntervalNs) / 1e9;
  m.attr("MAX_INTERVAL_S") = static_cast<double>(spyglass::kMaxIntervalNs) / 1e9;
  m.attr("DEFAULT_MEMORY_WINDOW") = spyglass::kDefaultMemoryWindowBytes;
  m.attr("MIN_MEMORY_WINDOW") = spyglass::kMinMemoryWindowBytes;
  m.attr("MAX_MEMORY_WINDOW") = spyglass::kMaxMemoryWindowBytes;
  m.attr("LINE_TIMELINE_POINTS") = spyglass::kLineTimelinePoints;
  m.attr("LINE_TIMELINE_POINTS_WRITTEN") = spyglass::kLineTimelinePointsWritten;
  m.attr("RUN_TIMELINE_POINTS") = spyglass::kRunTimelinePoints;

  m.def(
      "memory_totals",
      [] {
        py::dict out;
        for (const spyglass::shim::ThreadTotals& t : spyglass::shim::totals()) {
          py::dict d;
          d["alloc_bytes"] = t.alloc_bytes;
          d["alloc_count"] = t.alloc_count;
          d["free_bytes"] = t.free_bytes;
          d["free_count"] = t.free_count;
          d["copy_bytes"] = t.copy_bytes;
          out[py::int_(t.tid)] = d;
        }
        return out;
      },
      "Exact, unsampled allocation counts per native thread id since the last start() with "
      "memory on (tid 0: threads beyond the per-thread table, counted together).");

  m.def("kept_thread_states_made", &spyglass::cpython::KeptThreadState::made_count,
        "Thread states spyglass's own threads have made in this process to take the GIL with "
        "(each is made once and kept while its thread runs).");
  m.def("die_with_parent", &spyglass::platform::die_with_parent,
        "In a forked child: be killed when the parent dies.");
  m.def("watch_termination", &spyglass::platform::watch_termination, py::arg("signo"),
        "Wrap the interpreter's handler for `signo` (after signal.signal, on the main thread) "
        "so that a signal its main thread has not seen is sent again, then ends the process "
        "(platform/termination.hpp). False when the signal has no handler.");
  m.def("note_signal_forwarder", &spyglass::platform::note_signal_forwarder, py::arg("pid"),
        "The process that passes signals on to this one (the supervisor of `spyglass run`).");
  m.def("perf_clocks_allowed", &spyglass::platform::perf_clocks_allowed,
        "Whether threads that live a while are sampled by perf task-clock events here.");
  m.def("sample_signal", &spyglass::cpython::sample_signal,
        "The real-time signal the CPU sampler uses (-1 before the first run).");
  m.def(
      "keep_sample_signal",
      [](int signo) {
        return signo == spyglass::cpython::sample_signal() &&
               spyglass::cpython::keep_sample_signal(signo);
      },
      py::arg("signo"),
      "After the program set a handler for the sampling signal: the sampler's goes back in "
      "place and calls the program's for the copies that are not samples.");
  m.def("drop_forwarded_echoes", &spyglass::platform::drop_forwarded_echoes, py::arg("signo"),
        "Wrap the handler now installed for `signo` (on the main thread, after each "
        "signal.signal for it) so that a copy of a group's signal passed on by the forwarder "
        "is dropped (platform/forwarded_signals.hpp). False when there is nothing to wrap.");
  m.def("termination_seen", &spyglass::platform::termination_seen,
        "The Python handler of the watched signal has run.");
  m.def("note_exit_status", &spyglass::platform::note_exit_status, py::arg("path"),
        "Write the status this process passes to exit() into `path`, after the interpreter "
        "has finished (a forked child must call it again for its own).");
  m.def(
      "thread_started",
      [](py::object target) {
        auto* code =
            PyCode_Check(target.ptr()) ? reinterpret_cast<PyCodeObject*>(target.ptr()) : nullptr;
        if (auto* c = spyglass::cpython::Collector::active()) c->thread_started(code);
      },
      py::arg("target") = py::none(),
      "Called by a Python thread as it starts, with the code object it runs: sampled from "
      "its first scheduler tick.");
  m.def(
      "thread_exiting",
      [] {
        if (auto* c = spyglass::cpython::Collector::active()) c->thread_exiting();
      },
      "Called by a Python thread as it ends: its CPU since its last sample is kept (as its "
      "kind's sampled threads' if it was never sampled).");
  m.def(
      "program_starts",
      [] {
        if (auto* c = spyglass::cpython::Collector::active()) c->program_starting();
      },
      "Called on the main thread as the program's __main__ module starts: it is sampled "
      "from its next scheduler tick, its start-up's CPU left out.");
  spyglass::add_thread_entry(m);
  m.def(
      "recover_journal",
      [](const std::string& path) {
        std::string bytes;
        {
          std::ifstream in(path, std::ios::binary);
          if (!in) throw std::runtime_error("cannot read " + path);
          std::ostringstream ss;
          ss << in.rdbuf();
          bytes = ss.str();
        }
        spyglass::JournalState state;
        std::string error;
        if (!spyglass::read_journal(bytes, &state, &error)) throw py::value_error(error);
        // The dead process's addresses, named from the objects it had loaded.
        std::vector<spyglass::platform::LoadedObject> objects;
        for (const spyglass::NativeObject& o : state.objects) {
          objects.push_back({o.base, o.begin, o.end, o.path});
        }
        spyglass::platform::NativeSymbolizer symbols;
        symbols.use_objects(objects);
        const spyglass::NativeCosts native =
            spyglass::cpython::name_native_chains(state.native, symbols);
        const std::vector<spyglass::NativeFunction> functions =
            spyglass::cpython::native_function_names(symbols);
        return spyglass::journal_profile_json(state.header, state.view(), &native, &functions);
      },
      py::arg("path"),
      "The profile (JSON text, without source lines) of a process that died before writing "
      "one, rebuilt from its run journal up to its last complete sampling interval.");

  py::dict flags;
  flags["jump_relative"] = static_cast<uint32_t>(spyglass::kJumpRelative);
  flags["jump_absolute"] = static_cast<uint32_t>(spyglass::kJumpAbsolute);
  flags["jump_backward"] = static_cast<uint32_t>(spyglass::kJumpBackward);
  flags["no_fallthrough"] = static_cast<uint32_t>(spyglass::kNoFallthrough);
  flags["extended_arg"] = static_cast<uint32_t>(spyglass::kExtendedArg);
  flags["cache_shift"] = static_cast<uint32_t>(spyglass::kCacheShift);
  m.attr("BYTECODE_FLAGS") = flags;
  // Introspection of the call-site tables the sampler reads, for the tests.
  m.def(
      "call_site_table",
      [](py::object code, std::vector<uint32_t> bytecode_flags) {
        if (!PyCode_Check(code.ptr())) throw py::type_error("a code object is needed");
        if (!spyglass::cpython::init_call_sites()) throw std::runtime_error("no code-extra slot");
        auto* co = reinterpret_cast<PyCodeObject*>(code.ptr());
        spyglass::cpython::build_call_sites(
            co, spyglass::cpython::bytecode_format(std::move(bytecode_flags)));
        return spyglass::cpython::call_site_table(co);
      },
      py::arg("code"), py::arg("bytecode_flags"),
      "Per code unit of `code`: the stack slot of the callee of the call there, times two, "
      "plus one if the slot may hold NULL; -1 elsewhere.");
  // For bench/costs: the sample handler's own cost, run as a timer signal would run it.
  m.def(
      "time_sample_handler",
      [](uint32_t calls, bool native_context) {
        const spyglass::cpython::HandlerTiming t =
            spyglass::cpython::time_sample_handler(calls, native_context);
        return py::make_tuple(t.calls, t.handler_ns, t.clock_ns);
      },
      py::arg("calls"), py::arg("native_context") = false,
      "Runs the sample handler `calls` times on this thread, which a running profiler must be "
      "sampling: (runs, their thread CPU ns, ns the clock reads alone took). With "
      "native_context, each run unwinds the native frames of this call up to the interpreter.");
  m.def(
      "callee_of",
      [](py::object frame, std::vector<uint32_t> bytecode_flags) {
        if (!PyFrame_Check(frame.ptr())) throw py::type_error("a frame object is needed");
        PyObject* callee = nullptr;
        const spyglass::cpython::Callee kind = spyglass::cpython::callee_of_frame(
            reinterpret_cast<PyFrameObject*>(frame.ptr()),
            spyglass::cpython::bytecode_format(std::move(bytecode_flags)), &callee);
        const char* names[] = {"no table", "unknown", "python", "native"};
        py::object obj =
            callee != nullptr ? py::reinterpret_borrow<py::object>(callee) : py::none();
        return py::make_tuple(obj, names[static_cast<int>(kind)]);
      },
      py::arg("frame"), py::arg("bytecode_flags"),
      "What a frame that is executing a call is calling, read off its value stack as the "
      "sampler does: (callee, 'python' | 'native' | 'unknown').");

  py::class_<FilterConfig>(m, "FilterConfig")
      .def(py::init<>())
      .def_readwrite("program_paths", &FilterConfig::program_paths)
      .def_readwrite("library_prefixes", &FilterConfig::library_prefixes)
      .def_readwrite("internal_prefixes", &FilterConfig::internal_prefixes)
      .def_readwrite("only", &FilterConfig::only)
      .def_readwrite("exclude", &FilterConfig::exclude)
      .def_readwrite("pseudo_files", &FilterConfig::pseudo_files)
      .def_readwrite("profile_all", &FilterConfig::profile_all)
      .def_readwrite("functions", &FilterConfig::functions)
      .def("is_profiled_file", [](const FilterConfig& c, const std::string& file) {
        return spyglass::FileFilter(c).is_profiled_file(file);
      });

  py::class_<Profiler>(m, "Profiler")
      .def(py::init<>())
      .def("start", &Profiler::start, py::arg("interval_s"), py::arg("call_opcodes"),
           py::arg("bytecode_flags") = std::vector<uint32_t>{}, py::arg("memory") = false,
           py::arg("memory_window") = spyglass::kDefaultMemoryWindowBytes,
           py::arg("copy_window") = 0, py::arg("scope") = py::none(), py::arg("journal_path") = "",
           py::arg("journal_meta") = spyglass::MetaMembers{}, py::arg("gpu") = false)
      .def("stop", &Profiler::stop)
      .def("leaks_suspected", &Profiler::leaks_suspected)
      .def_property_readonly("running", &Profiler::running)
      .def_property_readonly("abandoned", &Profiler::abandoned)
      .def_property_readonly("started_at", &Profiler::started_at)
      .def_property_readonly("elapsed_s", &Profiler::elapsed_s)
      .def_property_readonly("gpu_profiled", &Profiler::gpu_profiled)
      .def("build", &Profiler::build, py::arg("filter"), py::arg("thread_names"))
      .def("to_json", &Profiler::to_json, py::arg("meta"), py::arg("sources"));
}
