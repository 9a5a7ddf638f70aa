"""Every field of the spyglass profile, described once.

The JSON Schema (``spyglass/schema``), the reader's checks (io), the key lists of the memory
figures, what merging adds up and the field tables of docs/profile-format.md are derived
from this table (schema_build, fields_docs); tests compare the C++ writer's output with it.
A new figure is one more row here, next to the engine that measures it.

Import-free on purpose (no typing, no collections): a profiled process reads the process
keys from here on its way out, and every millisecond of import is its overhead.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

#: Where fields live. "times" is not a level of its own: TIMES_LEVELS carry the times.
LEVELS = (
    "run",  # the document's top level
    "unattributed",
    "thread",
    "file",
    "line",
    "function",
    "leak",
    "frame",
    "stack",
    "process",
    "options",
    "native_function",
    "native_line",
    "native_caller",
    "gpu_device",
    "gpu_line_device",
)
TIMES_LEVELS = ("run", "unattributed", "thread", "file", "line", "function", "stack")
MEMORY_LEVELS = ("run", "thread", "file", "line", "function", "stack", "process")
SPLIT_LEVELS = ("run", "thread", "file", "line", "function", "stack", "process")
LINE_LEVELS = ("line", "function")
#: Objects that may hold keys this table does not describe (extensions stay readable).
OPEN_LEVELS = ("run", "process", "options")

#: When a field is in a document, as readers and the writer see it:
#: required     always, in every version readers accept;
#: memory       exactly when ``memory_profiled`` is true;
#: written      always written by this spyglass, absent from older profiles;
#: written-mem  written by this spyglass when ``memory_profiled``, absent from older ones;
#: optional     only some runs have it (say which in the description);
#: gpu          exactly when ``gpu_profiled`` is true (profile_model.gpu_fields checks it).
PRESENCES = ("required", "memory", "written", "written-mem", "optional", "gpu")

#: How ``spyglass merge`` (and the merge of a run's processes) combines a field:
MERGE_RULES = {
    "sum": "added up",
    "min": "the smallest",
    "max": "the largest",
    "any": "true when any input's is",
    "span": "the length of the union of the inputs' [started_at, started_at + elapsed_s]",
    "agree": "the inputs' when they all agree, else all of them listed",
    "exit": "the first non-zero one (else 0, else null)",
    "first": "the first non-empty one",
    "key": "identifies the entry: entries with the same key are merged",
    "union": "united (no duplicates)",
    "weighted": "mean weighted by mem_alloc_mb",
    "share": "recomputed: mem_alloc_mb over the result's mem_alloc_mb",
    "rate": "recomputed: copy_mb over the result's elapsed_s",
    "timeline": "moved into the earliest input's clock, summed as steps, reduced to its cap",
    "peak": "the place of the largest max_footprint_mb",
    "entries": "entries merged by their key fields",
    "concat": "every input's entries, in order",
    "constant": "the same in every profile",
    "merge": "written by the merge itself",
    "none": "not carried into a merged profile",
    "gpu": "recomputed from the inputs' GPU-busy and observed time (profile_model.gpu_merge)",
}

#: How ``spyglass diff`` uses a field: judged against its sampling noise, shown beside
#: the verdict, or not compared.
DIFF_RULES = ("judged", "shown", "ignored")


class Field:
    """One key of one or more levels of the document."""

    __slots__ = ("description", "diff", "kind", "levels", "merge", "name", "presence", "unit")

    def __init__(
        self,
        name: str,
        levels: tuple[str, ...],
        kind: str,
        unit: str,
        presence: str,
        merge: str,
        diff: str,
        description: str,
    ) -> None:
        self.name = name
        self.levels = levels
        self.kind = kind  # a key of schema_build.KINDS (value type and bounds)
        self.unit = unit  # "s", "MB", "MB/s", "%" or "" (counts, names, flags)
        self.presence = presence
        self.merge = merge
        self.diff = diff
        self.description = description

    def __repr__(self) -> str:
        return f"Field({self.name!r}, {self.levels!r})"


_T = TIMES_LEVELS
_L = LINE_LEVELS
_SUM_TIMES = "sum"

FIELDS: tuple[Field, ...] = (
    # ---------------------------------------------------------------- identity of the run
    Field("format", ("run",), "format", "", "required", "constant", "ignored",
          'the magic "spyglass-profile"; readers refuse anything else'),
    Field("schema_version", ("run",), "schema-version", "", "required", "constant", "ignored",
          "bumped on any incompatible change"),
    Field("spyglass_version", ("run",), "nonempty-str", "", "required", "agree", "ignored",
          "version of the profiler that wrote it"),
    Field("python_version", ("run",), "python-version", "", "required", "agree", "ignored",
          'the profiled interpreter, e.g. "3.11.7"'),
    Field("platform", ("run",), "nonempty-str", "", "required", "agree", "ignored",
          'e.g. "linux-x86_64"'),
    Field("program", ("run",), "nonempty-str", "", "required", "agree", "ignored",
          "the script path, -m module, or -c"),
    Field("argv", ("run",), "str-list", "", "required", "agree", "ignored",
          "sys.argv as the target saw it"),
    Field("exit_status", ("run",), "int?", "", "required", "exit", "ignored",
          "the target's exit status (null when profiled through the API)"),
    Field("started_at", ("run",), "time", "s", "required", "min", "ignored",
          "Unix time when profiling began"),
    Field("elapsed_s", ("run",), "seconds", "s", "required", "span", "ignored",
          "wall time profiled"),
    Field("interval_s", ("run",), "positive", "s", "required", "min", "ignored",
          "sampling period (CPU time per thread)"),
    Field("pid", ("run",), "int", "", "written", "none", "ignored",
          "the process id of the (root) process"),
    Field("dropped_samples", ("run",), "count", "", "written", "sum", "ignored",
          "CPU samples lost because a thread's buffer was full (normally 0); not their "
          "CPU time, which the thread's next sample carries"),
    # ---------------------------------------------------------------- times (every aggregate)
    Field("cpu_python_s", _T, "seconds", "s", "required", _SUM_TIMES, "judged",
          "CPU time running Python code (the interpreter)"),
    Field("cpu_native_s", _T, "seconds", "s", "required", _SUM_TIMES, "judged",
          "CPU time in native code called from Python (C extensions, libraries)"),
    Field("cpu_system_s", _T, "seconds", "s", "required", _SUM_TIMES, "judged",
          "CPU time in the kernel on the thread's behalf"),
    Field("cpu_gc_s", _T, "seconds", "s", "written", _SUM_TIMES, "ignored",
          "of cpu_python_s, the time the garbage collector ran (absent from older profiles: 0)"),
    Field("wait_s", _T, "seconds", "s", "required", _SUM_TIMES, "shown",
          "wall time spent off-CPU (sleep, I/O, locks, waiting for the GIL), less time "
          "queued for a CPU; never part of the CPU figures"),
    Field("await_s", _T, "seconds", "s", "written", _SUM_TIMES, "shown",
          "wall time asyncio tasks spent suspended at an await, async for or async with, on "
          "the stack of the task's await chain (innermost coroutine first); summed over "
          "tasks, so concurrent awaits add up beyond the wall time; never part of the CPU "
          "figures or wait_s (absent from older profiles: 0)"),
    Field("samples", _T, "count", "", "required", _SUM_TIMES, "judged",
          "CPU samples behind these figures: a time's uncertainty is about time / sqrt(samples)"),
    # ---------------------------------------------------------------- memory, whole run
    Field("memory_profiled", ("run",), "bool", "", "required", "any", "ignored",
          "whether the run profiled memory and copies; every memory key is present exactly "
          "when it is true"),
    Field("memory_window_mb", ("run",), "window", "MB", "memory", "min", "ignored",
          "the allocation sampling rate at the start of the run: the mean bytes allocated "
          "between two samples (it grows on runs that allocate a lot)"),
    Field("copy_window_mb", ("run",), "window", "MB", "memory", "min", "ignored",
          "the copy sampling window: a thread is sampled each time it has copied this much"),
    Field("dropped_memory_samples", ("run",), "count", "", "written-mem", "sum", "ignored",
          "memory samples lost because the hooks' ring was full (normally 0)"),
    Field("mem_alloc_mb", SPLIT_LEVELS, "mb", "MB", "memory", "sum", "shown",
          "sampled MB allocated (gross, not net of frees); a file's is the sum of its lines, "
          "the run's also counts what no profiled line accounts for"),
    Field("mem_free_mb", ("run",), "mb", "MB", "memory", "sum", "ignored",
          "estimated MB freed of the blocks allocated while profiling"),
    Field("mem_python_fraction", ("run", *_L), "fraction", "", "memory", "weighted", "ignored",
          "the share of mem_alloc_mb allocated through Python's allocator"),
    Field("mem_samples", ("run", *_L), "count", "", "memory", "sum", "ignored",
          "memory samples behind these figures"),
    Field("copy_mb", SPLIT_LEVELS, "mb", "MB", "memory", "sum", "ignored",
          "MB copied by the memcpy/memmove family"),
    Field("copy_mb_s", ("run", *_L), "mb", "MB/s", "memory", "rate", "ignored",
          "copy_mb / elapsed_s"),
    Field("cuda_htod_mb", ("run", *_L), "mb", "MB", "optional", "sum", "ignored",
          "MB copied from host to GPU through a CUDA library's copy entry points (present "
          "where there were any, in memory profiles; MB/s is this over elapsed_s; "
          "docs/gpu.md)"),
    Field("cuda_dtoh_mb", ("run", *_L), "mb", "MB", "optional", "sum", "ignored",
          "MB copied from GPU to host, as cuda_htod_mb"),
    Field("cuda_dtod_mb", ("run", *_L), "mb", "MB", "optional", "sum", "ignored",
          "MB copied within or between GPUs, as cuda_htod_mb"),
    Field("max_footprint_mb", ("run", "process"), "mb", "MB", "memory", "max", "ignored",
          "the largest footprint of the run (the sum of all net samples so far)"),
    Field("max_footprint_file", ("run",), "nonempty-str?", "", "memory", "peak", "ignored",
          "the file of the profiled line whose sample set that maximum (null when the "
          "allocating thread had no profiled frame)"),
    Field("max_footprint_lineno", ("run",), "lineno?", "", "memory", "peak", "ignored",
          "that line's number (null with the file)"),
    Field("footprint_timeline", ("run",), "run-timeline", "MB", "memory", "timeline", "ignored",
          "the footprint over the run, [t_s, mb] points (reduced with Ramer-Douglas-Peucker)"),
    Field("native_thread_alloc_mb", ("run",), "mb", "MB", "memory", "sum", "ignored",
          "sampled allocation by threads with no Python frame (native threads of libraries)"),
    # ---------------------------------------------------------------- containers of the run
    Field("unattributed", ("run",), "object:unattributed", "", "required", "entries", "ignored",
          "the part of the totals with no profiled frame on the stack (library-only stacks, "
          "threads with no Python frame)"),
    Field("threads", ("run",), "list:thread", "", "required", "entries", "ignored",
          "one entry per thread (threads of different inputs are kept apart when merged)"),
    Field("files", ("run",), "map:file", "", "required", "entries", "ignored",
          "keyed by absolute path (or pseudo-file such as <string>; an IPython cell is named "
          "as IPython numbers it, In [7])"),
    Field("frame_files", ("run",), "str-list", "", "optional", "none", "ignored",
          "the files of the frame table, which its frames name by index: written with "
          "frames that do (a file's path once, not once per frame)"),
    Field("frames", ("run",), "list:frame", "", "required", "entries", "ignored",
          "the frame table that stacks index"),
    Field("stacks", ("run",), "list:stack", "", "required", "entries", "ignored",
          "aggregated Python stacks, by descending total time"),
    Field("options", ("run",), "object:options", "", "required", "entries", "ignored",
          "the options the run was made with"),
    Field("processes", ("run",), "list:process", "", "optional", "concat", "ignored",
          "present when child processes were profiled: one entry per process, the root "
          "first; the top-level figures are their sum"),
    Field("sources", ("run",), "list", "", "optional", "merge", "ignored",
          "written by spyglass merge: every input (docs/formats.md)"),
    Field("elapsed_s_total", ("run",), "seconds", "s", "optional", "merge", "ignored",
          "written by spyglass merge: the sum of the inputs' elapsed_s"),
    Field("tasks", ("run",), "list", "", "optional", "concat", "ignored",
          "present when asyncio tasks awaited: one entry per task name and coroutine "
          "({name, coroutine, await_s}), longest await first; at most 200, the rest added up "
          "as one [other] entry"),
    Field("tests", ("run",), "list", "", "optional", "none", "ignored",
          "written by pytest --spyglass: one entry per test, in the order they ran"),
    Field("snapshot", ("run",), "bool", "", "optional", "none", "ignored",
          "true in a profile written while the program was still running (run "
          "--snapshot-every): its running processes as their journals stood"),
    Field("attached", ("run",), "bool", "", "optional", "none", "ignored",
          "true in a profile of a process spyglass attach reached while it ran: its memory "
          "figures count only what was allocated after attaching, its CPU only the time since"),
    Field("task_types", ("run",), "list", "", "optional", "concat", "ignored",
          "written by the Dask integration (spyglass.dask): which task type spent what, one "
          "entry per task type and process (docs/clusters.md)"),
    Field("host", ("run", "process"), "str", "", "optional", "agree", "ignored",
          "the host (node name) the process ran on, where it was profiled on a cluster"),
    Field("worker", ("run", "process"), "str", "", "optional", "none", "ignored",
          "the cluster engine's name for the worker process (spyglass.dask)"),
    Field("recovered", ("run", "process"), "bool", "", "optional", "none", "ignored",
          "true for a process that died before writing its profile (rebuilt from its journal)"),
    Field("role", ("run", "process"), "str", "", "optional", "none", "ignored",
          "marks multiprocessing's own helper processes"),
    Field("ended", ("run", "process"), "str", "", "optional", "none", "ignored",
          "marks a pool worker its pool terminated"),
    # ---------------------------------------------------------------- threads
    Field("tid", ("thread",), "int", "", "required", "key", "ignored",
          "the thread's native id"),
    Field("name", ("thread",), "str?", "", "required", "key", "ignored",
          "the thread's name (null when unknown)"),
    # ---------------------------------------------------------------- files, lines, functions
    Field("lines", ("file",), "list:line", "", "required", "entries", "ignored",
          "one entry per line with samples (CPU, or in a memory profile memory or copy "
          "samples), by lineno"),
    Field("functions", ("file",), "list:function", "", "required", "entries", "ignored",
          "one entry per function with samples, by first_lineno; a function's figures are "
          "the sum of its lines'"),
    Field("leaks", ("file",), "list:leak", "", "memory", "entries", "ignored",
          "the file's possible leaks, most likely first (may be empty)"),
    Field("lineno", ("line", "leak"), "lineno", "", "required", "key", "ignored",
          "the line number"),
    Field("source", ("line",), "str", "", "required", "first", "ignored",
          "the line's text, without newline"),
    Field("name", ("function",), "nonempty-str", "", "required", "key", "ignored",
          "the function's qualified name (plain name on 3.9/3.10)"),
    Field("first_lineno", ("function",), "lineno", "", "required", "key", "ignored",
          "the line the function starts on"),
    Field("mem_avg_mb", _L, "mb", "MB", "memory", "weighted", "ignored",
          "average allocation per execution of the line"),
    Field("mem_peak_mb", _L, "mb", "MB", "memory", "max", "ignored",
          "the most one execution of the line added before its frees"),
    Field("mem_share", _L, "fraction", "", "memory", "share", "ignored",
          "mem_alloc_mb / the top-level mem_alloc_mb"),
    Field("mem_timeline", _L, "line-timeline", "MB", "memory", "timeline", "ignored",
          "the process's footprint at each memory sample taken at the line (may be empty)"),
    Field("mem_freed_mb", _L, "mb", "MB", "written-mem", "sum", "ignored",
          "MB freed of the line's own sampled blocks (absent from older profiles)"),
    Field("mem_live_end_mb", _L, "mb", "MB", "written-mem", "sum", "ignored",
          "MB of the line's own blocks still allocated at the end (absent from older profiles)"),
    Field("mem_live_at_peak_mb", _L, "mb", "MB", "written-mem", "sum", "ignored",
          "MB of the line's own blocks allocated when the footprint was at its maximum "
          "(absent from older profiles)"),
    Field("likelihood", ("leak",), "fraction", "", "required", "max", "ignored",
          "the confidence that the line's live bytes rise"),
    Field("rate_mb_s", ("leak",), "mb", "MB/s", "required", "sum", "ignored",
          "the growth of the line's live bytes per second"),
    # ---------------------------------------------------------------- GPU (docs/gpu.md)
    Field("gpu_profiled", ("run",), "bool", "", "optional", "any", "ignored",
          "true when the GPU was profiled (NVML found); every GPU key is present exactly then"),
    Field("gpu_per_process", ("run",), "bool", "", "gpu", "gpu", "ignored",
          "whether every device gave this process's own figures (else device-wide ones)"),
    Field("gpu_util_pct", ("run", *_L), "percent", "%", "gpu", "gpu", "ignored",
          "GPU utilisation while the line ran (averaged over the devices): the GPU-busy time "
          "of the readings charged to it over the time they stand for"),
    Field("gpu_mem_mb", ("run", *_L), "mb", "MB", "gpu", "gpu", "ignored",
          "GPU memory in use while the line ran: the mean over its readings, all devices"),
    Field("gpu_peak_mem_mb", ("run", *_L), "mb", "MB", "gpu", "max", "ignored",
          "the most GPU memory in use in one reading charged to it"),
    Field("gpu_busy_s", ("run", *_L), "seconds", "s", "gpu", "sum", "ignored",
          "GPU-busy seconds charged to it (utilisation times time, summed over the devices)"),
    Field("gpu_observed_s", ("run", *_L), "seconds", "s", "gpu", "sum", "ignored",
          "the time it was seen running while the GPU was read"),
    Field("gpu_share", _L, "fraction", "", "gpu", "gpu", "ignored",
          "the line's share of the run's GPU-busy time"),
    Field("gpu_unattributed_busy_s", ("run",), "seconds", "s", "gpu", "sum", "ignored",
          "GPU-busy seconds of readings no profiled line was running for"),
    Field("gpu_timeline", ("run",), "run-timeline", "MB", "gpu", "timeline", "ignored",
          "GPU memory in use over the run, all devices together, [t_s, mb] points"),
    Field("gpu_note", ("run",), "str?", "", "gpu", "first", "ignored",
          "why GPU sampling ended early, or what the driver would not give (null when nothing)"),
    Field("gpu_devices", ("run",), "nonempty-list", "", "gpu", "gpu", "ignored",
          "per device (gpu_device objects), by index"),
    Field("gpu_devices", _L, "list", "", "optional", "gpu", "ignored",
          "with several GPUs only: the line's figures per device (gpu_line_device objects)"),
    Field("index", ("gpu_device", "gpu_line_device"), "count", "", "required", "key", "ignored",
          "the device's NVML index"),
    Field("name", ("gpu_device",), "str", "", "required", "first", "ignored",
          "the device's name"),
    Field("total_mem_mb", ("gpu_device",), "mb", "MB", "required", "max", "ignored",
          "the device's memory"),
    Field("util_per_process", ("gpu_device",), "bool", "", "required", "any", "ignored",
          "whether its utilisation was this process's own (else device-wide)"),
    Field("memory_per_process", ("gpu_device",), "bool", "", "required", "any", "ignored",
          "whether its memory was this process's own (else device-wide)"),
    Field("util_pct", ("gpu_device", "gpu_line_device"), "percent", "%", "required", "gpu",
          "ignored", "utilisation on this device (gpu_util_pct's meaning)"),
    Field("mem_mb", ("gpu_device", "gpu_line_device"), "mb", "MB", "required", "gpu",
          "ignored", "memory in use on this device (gpu_mem_mb's meaning)"),
    Field("peak_mem_mb", ("gpu_device", "gpu_line_device"), "mb", "MB", "required", "max",
          "ignored", "the most memory in use on this device in one reading"),
    Field("busy_s", ("gpu_device", "gpu_line_device"), "seconds", "s", "required", "sum",
          "ignored", "GPU-busy seconds on this device"),
    # ---------------------------------------------------------------- native functions
    Field("native_functions", ("run",), "list:native_function", "", "optional", "entries",
          "ignored",
          "every native function CPU samples stopped in: self time over the run and the "
          "lines that led there (at most 20), heaviest first; at most 100, the rest added up "
          "as one last [other] entry; absent when no sample was native"),
    Field("native_functions", ("line",), "list:native_function", "", "optional", "entries",
          "ignored",
          "the line's native time by the native function its samples stopped in, heaviest "
          "first (the line's native samples only); at most 30, the rest as [other]"),
    Field("native", ("stack",), "list:native_function", "", "optional", "entries", "ignored",
          "the native functions the stack's native samples stopped in, below its innermost "
          "frame, one entry per chain of native callers; at most 30, the rest as [other]"),
    Field("name", ("native_function", "native_caller"), "str", "", "required", "key", "ignored",
          "the demangled symbol, library+0xoffset when the library names none, [anonymous] "
          "for code in no file (JIT), or [other] for the entries past a list's bound"),
    Field("library", ("native_function", "native_caller"), "str", "", "required", "key",
          "ignored", "the file name of the object holding it; empty when none"),
    Field("callers", ("native_function",), "list:native_caller", "", "optional", "key",
          "ignored",
          "stack level only: the native functions that called it, outermost first, from "
          "the one the interpreter called; absent when none could be unwound"),
    Field("cpu_s", ("native_function", "native_line"), "seconds", "s", "required", "sum",
          "ignored", "CPU time of the samples that stopped in it"),
    Field("samples", ("native_function",), "count", "", "required", "sum", "ignored",
          "CPU samples that stopped in it"),
    Field("lines", ("native_function",), "list:native_line", "", "optional", "entries",
          "ignored", "run level only: the Python lines that led there, heaviest first"),
    Field("file", ("native_line",), "str", "", "required", "key", "ignored",
          "the Python file of a line that led to the function"),
    Field("lineno", ("native_line",), "lineno", "", "required", "key", "ignored",
          "that line's number"),
    # ---------------------------------------------------------------- frames and stacks
    Field("file", ("frame",), "frame-file", "", "required", "key", "ignored",
          'the frame\'s file, or its index in frame_files (files spyglass writes name them '
          'so); "<truncated>" marks a stack with frames left out (its first frame)'),
    Field("function", ("frame",), "str", "", "required", "key", "ignored",
          "the frame's function"),
    Field("lineno", ("frame",), "int", "", "required", "key", "ignored",
          "the frame's line"),
    Field("frames", ("stack",), "frame-indexes", "", "required", "key", "ignored",
          "indexes into the frame table, outermost first (at most 128 frames and the "
          "truncation marker)"),
    # ---------------------------------------------------------------- processes
    Field("pid", ("process",), "int?", "", "written", "key", "ignored",
          "the process id"),
    Field("program", ("process",), "str?", "", "written", "none", "ignored",
          "what the process ran"),
    Field("argv", ("process",), "str-list?", "", "written", "none", "ignored",
          "its sys.argv"),
    Field("exit_status", ("process",), "int?", "", "written", "none", "ignored",
          "its exit status (null: killed by a signal, or recovered)"),
    Field("elapsed_s", ("process",), "seconds?", "s", "written", "none", "ignored",
          "its wall time profiled (null when not profiled)"),
    Field("cpu_python_s", ("process",), "seconds", "s", "written", "sum", "ignored",
          "its cpu_python_s"),
    Field("cpu_native_s", ("process",), "seconds", "s", "written", "sum", "ignored",
          "its cpu_native_s"),
    Field("cpu_system_s", ("process",), "seconds", "s", "written", "sum", "ignored",
          "its cpu_system_s"),
    Field("wait_s", ("process",), "seconds", "s", "written", "sum", "ignored",
          "its wait_s"),
    Field("samples", ("process",), "count", "", "written", "sum", "ignored",
          "its samples"),
    Field("not_profiled", ("process",), "str", "", "optional", "none", "ignored",
          "why a Python process of the run could not be profiled (listed with zero figures)"),
    Field("python_version", ("process",), "str?", "", "optional", "none", "ignored",
          "the version of a process that could not be profiled"),
    # ---------------------------------------------------------------- options
    Field("program_path", ("options",), "str-list", "", "required", "union", "ignored",
          "the directories of the program's own code"),
    Field("profile_all", ("options",), "bool", "", "required", "any", "ignored",
          "whether every file was profiled"),
    Field("profile_only", ("options",), "str-list", "", "required", "union", "ignored",
          "only files whose path contains one of these"),
    Field("profile_exclude", ("options",), "str-list", "", "required", "union", "ignored",
          "no file whose path contains one of these"),
    Field("functions", ("options",), "functions-option", "", "required", "union", "ignored",
          "[file, first_lineno] of the functions narrowed to with @spyglass.profile"),
    Field("interval_s", ("options",), "positive", "s", "written", "agree", "ignored",
          "the sampling interval asked for"),
    Field("gpu", ("options",), "bool", "", "written", "agree", "ignored",
          "whether GPU profiling was asked for (it happens only where NVML loads)"),
    Field("memory", ("options",), "bool", "", "written", "agree", "ignored",
          "whether memory profiling was asked for"),
    Field("memory_window", ("options",), "count", "", "written", "agree", "ignored",
          "the memory sampling window asked for, in bytes"),
)  # fmt: skip


def at(level: str) -> tuple[Field, ...]:
    """The fields of ``level``, in the table's order."""
    return tuple(f for f in FIELDS if level in f.levels)


def names(
    level: str,
    *,
    presence: Iterable[str] | None = None,
    merge: Iterable[str] | None = None,
    unit: str | None = None,
) -> tuple[str, ...]:
    """The names of ``level``'s fields, narrowed to some presences, merge rules or unit."""
    wanted_presence = None if presence is None else set(presence)
    wanted_merge = None if merge is None else set(merge)
    return tuple(
        f.name
        for f in at(level)
        if (wanted_presence is None or f.presence in wanted_presence)
        and (wanted_merge is None or f.merge in wanted_merge)
        and (unit is None or f.unit == unit)
    )


def field(level: str, name: str) -> Field:
    """The field ``name`` of ``level``; KeyError when the table has none."""
    for f in FIELDS:
        if f.name == name and level in f.levels:
            return f
    raise KeyError(f"no field {name!r} at level {level!r}")


def promised(level: str, memory: bool) -> tuple[str, ...]:
    """What this spyglass writes at ``level`` in every profile of that kind (with memory
    figures or not): what a writer may not leave out."""
    kinds = ("required", "written", *(("memory", "written-mem") if memory else ()))
    return names(level, presence=kinds)


def allowed(level: str, memory: bool) -> tuple[str, ...]:
    """Every key ``level`` may have in a profile of that kind."""
    skip = () if memory else ("memory", "written-mem")
    return tuple(f.name for f in at(level) if f.presence not in skip)


#: Levels whose rows leave out every figure that is 0 (schema 3): a run of hundreds of
#: threads writes thousands of thread and stack rows, most of whose figures are 0 (no GC,
#: no await, no copies, a stack that only waited). A reader takes an absent one as 0.
ZERO_LEVELS = ("thread", "stack")
_FIGURE_KINDS = ("seconds", "count", "mb")


def zero_omitted(level: str) -> tuple[str, ...]:
    """The figures rows of ``level`` leave out when they are 0 (none outside ZERO_LEVELS)."""
    if level not in ZERO_LEVELS:
        return ()
    return tuple(f.name for f in at(level) if f.merge == "sum" and f.kind in _FIGURE_KINDS)


#: The seconds every times object has (cpu_python_s ... await_s), in the table's order.
TIME_KEYS = names("unattributed", presence=["required"], unit="s")
#: The parts of them that newer profiles add (GC, await, ...), which merging adds up too.
PART_KEYS = names("unattributed", presence=["written", "optional"], merge=["sum"])

__all__ = [
    "DIFF_RULES",
    "FIELDS",
    "LEVELS",
    "MERGE_RULES",
    "OPEN_LEVELS",
    "PART_KEYS",
    "PRESENCES",
    "TIMES_LEVELS",
    "TIME_KEYS",
    "ZERO_LEVELS",
    "Field",
    "allowed",
    "at",
    "field",
    "names",
    "promised",
    "zero_omitted",
]
