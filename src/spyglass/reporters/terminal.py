"""The terminal reporter: a line-level report that reads well in 80 columns and in a pipe.

Every percentage is a share of the run's total CPU time (Python + native + system), so the
figures of all files and lines add up. Wait (off-CPU) time is shown in seconds. A profile
with memory figures gets memory columns, summary lines and a leaks section as well (see
:mod:`spyglass.reporters.terminal_memory`); one without is shown exactly as before.
"""

from __future__ import annotations

import io

from spyglass.profile_model import memory_figures as memory
from spyglass.profile_model import queries as proc
from spyglass.profile_model import whole_run
from spyglass.reporters import (
    should_use_color,
    terminal_native,
    terminal_task_types,
    terminal_tasks,
    terminal_tests,
)
from spyglass.reporters import terminal_gpu as tg
from spyglass.reporters import terminal_memory as tm
from spyglass.reporters.base import Reporter
from spyglass.reporters.styled import Console, Text
from spyglass.reporters.terminal_text import (
    ASCII,
    NUM_W,
    ROUGH,
    STYLES,
    UNICODE,
    Glyphs,
    fmt_percent,
    fmt_seconds,
    make_console,
    report_width,
    shorten_path,
    supports_unicode,
    wrap,
)
from spyglass.safe_text import escape_data, escape_text

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import IO, Any

    from spyglass.profile_model.io import Profile
    from spyglass.reporters.styled import OverflowMethod


def draws_on_stacks(profile: Profile, *, tree: bool = False) -> bool:
    """Whether the report reads the stack table (frames, stacks): for the call tree, or for
    the whole run's hottest lines when nothing landed in the program's files. A reader of
    a profile's text may leave the table undecoded otherwise (runtime.output)."""
    return tree or not proc.file_share(profile)


class _Report:
    """One rendering: the console, the run's totals and the layout decisions."""

    def __init__(self, profile: Profile, console: Console, glyphs: Glyphs, rep: TerminalReporter):
        self.profile = profile
        self.console = console
        self.g = glyphs
        self.overflow: OverflowMethod = "ellipsis" if glyphs is UNICODE else "crop"
        self.rep = rep
        self.width = max(console.width, 40)
        self.rule_width = min(self.width, 100)  # rules and bars stop growing past this
        self.total = proc.total_cpu(profile)
        self.rough_shown = False
        self.no_source = Text("(source not available)", style=STYLES["muted"])
        self.first_w = 4  # width of the line-number column of the current file
        self.show_wait = False  # whether the current file's tables have a wait column
        self.show_await = False  # ... and an await column (asyncio tasks)
        self.mem: tm.MemoryColumns | None = None
        self.gpu = (
            tg.GpuColumns(profile) if tg.is_profiled(profile) or tg.has_copies(profile) else None
        )
        if memory.is_profiled(profile):
            # One choice for the whole report (as if every table had a wait column), so that
            # all tables have the same columns.
            times = 3 + (float(profile["wait_s"]) > 0) + (proc.await_s(profile) > 0)
            fixed = 4 + (NUM_W + 1) * times + 3
            fixed += self.gpu.width if self.gpu is not None else 0
            columns = tm.choose_columns(self.width, fixed, profile)
            self.mem = tm.MemoryColumns(profile, columns, unicode=glyphs is UNICODE)

    def out(self, text: Text) -> None:
        self.console.print(text, no_wrap=True, overflow=self.overflow, crop=True)

    def say(self, text: str, style: str = STYLES["muted"], *, indent: str = "") -> None:
        """Prose (hints, advice): wrapped at the width, never cut, in a pipe too."""
        lines = wrap(text, self.width, indent)
        for line in lines:
            self.console.print(Text(line, style=style), overflow="fold", crop=False)

    # -- header -------------------------------------------------------------------------

    def header(self) -> None:
        s = proc.summary(self.profile)
        title = Text()
        title.append("spyglass", style=STYLES["heading"])
        title.append(f" {self.g.dot} ", style=STYLES["muted"])
        title.append(s.command)
        self.out(title)
        facts = [
            f"{fmt_seconds(s.elapsed_s, space=True) or '0 s'} elapsed",
            f"{s.threads} thread{'s' if s.threads != 1 else ''}",
            f"{s.samples} samples (every {s.interval_s * 1000:g} ms of CPU)",
        ]
        info = Text()
        info.append(f" {self.g.dot} ".join(facts), style=STYLES["muted"])
        if s.exit_status not in (None, 0):
            info.append(f" {self.g.dot} ", style=STYLES["muted"])
            info.append(f"exit status {s.exit_status}", style=STYLES["error"])
        self.out(info)
        if self.profile.get("attached"):
            note = "attached to a running process: memory counts only what it allocated since"
            self.out(Text(note, style=STYLES["muted"]))
        self.out(Text())

        label_w = 14  # "  CPU  3.40 s "
        cpu = Text()
        cpu.append(f"  CPU {fmt_seconds(s.cpu_s, space=True) or '0 s':>7} ", style="bold")
        cpu.append_text(self.bar(s, min(self.rule_width - label_w, 64)))
        self.out(cpu)
        parts = [
            ("Python", s.python_s, s.python_pct, STYLES["python"], self.g.bars[0]),
            ("native", s.native_s, s.native_pct, STYLES["native"], self.g.bars[1]),
            ("system", s.system_s, s.system_pct, STYLES["system"], self.g.bars[2]),
        ]
        pieces = []
        for name, secs, pct, style, glyph in parts:
            piece = Text()
            piece.append(f"{glyph} ", style=style)
            piece.append(f"{name} ", style=style)
            piece.append(f"{fmt_seconds(secs, space=True) or '0 s'} {fmt_percent(pct) or '0%'}")
            pieces.append(piece)
        one_line = Text(" " * label_w).append_text(Text("  ").join(pieces))
        if one_line.cell_len <= self.width:
            self.out(one_line)
        else:
            for piece in pieces:
                self.out(Text(" " * label_w).append_text(piece))
        wait = Text()
        wait.append(f"  wait{fmt_seconds(s.wait_s, space=True) or '0 s':>7} ", style="bold")
        wait.append("off-CPU: sleep, I/O, locks, waiting for the GIL", style=STYLES["muted"])
        self.out(wait)
        if proc.await_s(self.profile) > 0:
            awaited = Text()
            awaited_text = fmt_seconds(proc.await_s(self.profile), space=True) or "0 s"
            awaited.append(f"  await {awaited_text:>6} ", style="bold")
            awaited.append(
                "asyncio tasks suspended at an await, each task counted", style=STYLES["muted"]
            )
            self.out(awaited)
        if s.gc_s > 0:
            gc = Text()
            gc.append(f"  GC  {fmt_seconds(s.gc_s, space=True) or '0 s':>7} ", style="bold")
            gc.append(
                "of the Python time, in the garbage collector",
                style=STYLES["muted"],
            )
            self.out(gc)
        if self.mem is not None:
            for line in tm.summary_lines(
                self.profile,
                indent=label_w,
                spark_width=min(self.rule_width - label_w, 48),
                unicode=self.g is UNICODE,
                dot=self.g.dot,
            ):
                self.out(line)
        if s.unattributed_pct >= 0.05:
            note = (
                f"{fmt_percent(s.unattributed_pct)} of CPU ran outside profiled files "
                "(start-up, libraries, native threads)"
            )
            self.say(note, indent="  ")
        lost = int(self.profile.get("dropped_samples") or 0)
        lost_mem = int(self.profile.get("dropped_memory_samples") or 0)
        if lost or lost_mem:
            kinds = [f"{lost} CPU" if lost else "", f"{lost_mem} memory" if lost_mem else ""]
            self.say(
                f"{' and '.join(k for k in kinds if k)} samples came faster than spyglass "
                "could record them and were left out: those figures are low",
                indent="  ",
            )
        self.processes()

    def processes(self) -> None:
        """One line per process when child processes were profiled into the run."""
        procs = self.profile.get("processes") or []
        if len(procs) < 2:
            return
        self.out(Text(f"  {len(procs)} processes:", style="bold"))
        for p in sorted(
            procs, key=lambda p: -(p["cpu_python_s"] + p["cpu_native_s"] + p["cpu_system_s"])
        ):
            cpu = p["cpu_python_s"] + p["cpu_native_s"] + p["cpu_system_s"]
            share = 100.0 * cpu / self.total if self.total > 0 else 0.0
            status = "" if p.get("exit_status") is None else f"exit {p['exit_status']}"
            if p.get("recovered"):
                status = "died"  # killed before it could write its profile
            if p.get("ended") or p.get("role"):
                status = ""  # a pool's shutdown, a helper of Python's own: no failure
            if p.get("not_profiled"):
                status = "unprofiled"
            line = Text(f"  {p['pid']:>8} {fmt_percent(share):>6}  {status:<10}  ")
            words = " ".join(p.get("argv") or [str(p.get("program") or "")])
            if p.get("worker"):  # a cluster's worker: where it ran says more than its argv
                words = f"{p.get('host') or '?'} worker {p['worker']}"
            if p.get("role") or p.get("ended"):
                label = p.get("role") or p.get("ended")
                # A helper's argv is multiprocessing's "-c", which says nothing more.
                words = label if words in ("-c", "") else f"{label}: {words}"
            if p.get("not_profiled"):
                words = f"{p['not_profiled']}: {words}"
            command = Text(words, style=STYLES["muted"])
            command.truncate(max(self.width - line.cell_len, 1), overflow=self.overflow)
            self.out(line.append_text(command))

    def bar(self, s: proc.Summary, width: int) -> Text:
        bar = Text()
        if s.cpu_s <= 0 or width <= 0:
            return bar
        cells = [round(width * p / 100.0) for p in (s.python_pct, s.native_pct, s.system_pct)]
        cells[0] = max(0, width - cells[1] - cells[2])
        for n, glyph, key in zip(cells, self.g.bars, ("python", "native", "system")):
            bar.append(glyph * n, style=STYLES[key])
        return bar

    # -- rows ---------------------------------------------------------------------------

    def pct_cell(self, value: float, rough: bool, style: str) -> Text:
        text = fmt_percent(value)
        if text and rough and not text.startswith("<"):
            text = ROUGH + text
            self.rough_shown = True
        return Text(text.rjust(NUM_W), style=f"{style} dim" if rough else style)

    def row(self, first: str, times: Mapping[str, Any] | None, label: Text) -> Text:
        """One table row: line number (or function's first line), figures, gutter, label."""
        line = Text()
        line.append(first.rjust(self.first_w), style=STYLES["muted"])
        if times is not None:
            rough = proc.is_rough(times, self.rep.min_samples)
            for key in ("python", "native", "system"):
                pct = proc.percent(float(times[f"cpu_{key}_s"]), self.total)
                line.append(" ")
                line.append_text(self.pct_cell(pct, rough, STYLES[key]))
            if self.show_wait:
                line.append(" ")
                line.append(fmt_seconds(float(times["wait_s"])).rjust(NUM_W), STYLES["wait"])
            if self.show_await:
                line.append(" ")
                line.append(fmt_seconds(proc.await_s(times)).rjust(NUM_W), STYLES["await"])
            if self.mem is not None:
                line.append_text(self.mem.cells(times))
            if self.gpu is not None:
                line.append_text(self.gpu.cells(times))
        else:
            line.append(" " * ((NUM_W + 1) * (3 + self.show_wait + self.show_await)))
            if self.mem is not None:
                line.append_text(self.mem.blank())
            if self.gpu is not None:
                line.append_text(self.gpu.blank())
        line.append(f" {self.g.gutter}", style=STYLES["rule"])
        if label:
            label = label.copy()
            label.truncate(max(self.width - line.cell_len - 1, 1), overflow=self.overflow)
            line.append(" ").append_text(label)
        return line

    def note(self, message: str) -> None:
        self.say(message, indent=f"{'':>{self.first_w}} + ")

    def column_heads(self, last: str, first: str = "line") -> Text:
        heads = Text()
        heads.append(first.rjust(self.first_w), style=STYLES["heading"])
        for name in ("Python", "native", "system", "wait", "await"):
            key = name.lower()
            if (key != "wait" or self.show_wait) and (key != "await" or self.show_await):
                heads.append(" " + name.rjust(NUM_W), style=f"bold {STYLES[key]}")
        if self.mem is not None:
            heads.append_text(self.mem.heads())
        if self.gpu is not None:
            heads.append_text(self.gpu.heads())
        heads.append(f" {self.g.gutter} ", style=STYLES["rule"])
        heads.append(last, style=STYLES["heading"])
        return heads

    # -- per file -----------------------------------------------------------------------

    def rule(self, share: proc.FileShare) -> None:
        right = f" {fmt_percent(share.percent) or '0%'} of CPU"
        if share.wait_s > 0:
            right += f" {self.g.dot} {fmt_seconds(share.wait_s, space=True)} wait"
        alloc = memory.alloc_mb(self.profile["files"][share.path]) if self.mem else 0.0
        if alloc > 0:
            right += f" {self.g.dot} {tm.fmt_mb(alloc)} allocated"
        right += " "
        dash = "─" if self.g is UNICODE else "-"
        room = self.rule_width - len(right) - 6
        path = shorten_path(share.path, max(room, 10), self.g.ellipsis)
        line = Text()
        line.append(dash * 2 + " ", style=STYLES["rule"])
        line.append(path, style=STYLES["path"])
        fill = self.rule_width - line.cell_len - len(right) - 3
        line.append(" " + dash * max(fill, 1), style=STYLES["rule"])
        line.append(right, style=STYLES["heading"])
        line.append(dash * 2, style=STYLES["rule"])
        self.out(line)

    def file_section(self, share: proc.FileShare, always: set[tuple[str, int]]) -> None:
        self.out(Text())
        self.rule(share)
        shown = proc.select_lines(
            self.profile, share.path, min_percent=self.rep.min_percent, always=always
        )
        funcs = proc.top_functions(self.profile, share.path)
        self.show_wait = any(float(x["wait_s"]) > 0 for x in [*shown, *funcs])
        self.show_await = any(proc.await_s(x) > 0 for x in [*shown, *funcs])
        linenos = [int(x["lineno"]) for x in shown] + [int(f["first_lineno"]) for f in funcs]
        self.first_w = max([4, *(len(str(n)) for n in linenos)])

        self.out(self.column_heads("source"))
        sources = proc.dedent_sources([str(x["source"]) for x in shown])
        by_line = {int(x["lineno"]): src for x, src in zip(shown, sources)}
        for item in proc.with_gaps(shown):
            if item is None:
                self.out(self.row(self.g.elision, None, Text()))
                continue
            source = by_line[int(item["lineno"])]
            label = Text(source) if source.strip() else self.no_source
            self.out(self.row(str(item["lineno"]), item, label))
            native_row = terminal_native.line_label(self, item)
            if native_row is not None:  # under the figures, where there is room for names
                native_row.truncate(self.width, overflow=self.overflow)
                self.out(native_row)
        hidden, hidden_cpu = proc.hidden_lines(self.profile, share.path, shown)
        if hidden:
            pct = fmt_percent(proc.percent(hidden_cpu, self.total)) or "0%"
            lines = f"{hidden} more line{'s' if hidden != 1 else ''}"
            if self.mem is None:
                self.note(f"{lines} below {self.rep.min_percent:g}% ({pct} of CPU in all)")
            else:
                mb = tm.fmt_mb(tm.hidden_alloc_mb(self.profile, share.path, shown)) or "0 MB"
                below = f"below {self.rep.min_percent:g}% of CPU and of memory"
                self.note(f"{lines} {below} ({pct} of CPU, {mb} in all)")

        if not funcs:
            return
        self.out(Text())
        self.out(self.column_heads("function"))
        limit = self.rep.max_functions
        for fn in funcs[:limit]:
            self.out(self.row(str(fn["first_lineno"]), fn, Text(str(fn["name"]))))
        if len(funcs) > limit:
            rest_cpu = sum(proc.cpu_s(f) for f in funcs[limit:])
            pct = fmt_percent(proc.percent(rest_cpu, self.total)) or "0%"
            self.note(f"{len(funcs) - limit} more functions ({pct} of CPU in all)")

    # -- whole report ---------------------------------------------------------------------

    def hottest(self, top: Sequence[proc.LineRef], *, by_memory: bool = False) -> None:
        title = "Lines that allocated the most" if by_memory else "Hottest lines"
        self.out(Text())
        self.out(Text(title, style=STYLES["heading"]))
        locations = [f"{r.path.rsplit('/', 1)[-1]}:{r.lineno}" for r in top]
        loc_w = min(max(len(x) for x in locations), 28)
        for ref, loc in zip(top, locations):
            line = Text("  ")
            if by_memory:
                line.append(tm.fmt_mb(memory.alloc_mb(ref.line)).rjust(7), style="bold")
            else:
                line.append_text(self.pct_cell(ref.percent, proc.is_rough(ref.line), "bold"))
            line.append("  " + shorten_path(loc, loc_w, self.g.ellipsis).ljust(loc_w) + "  ")
            source = Text(str(ref.line["source"]).strip())
            source.truncate(max(self.width - line.cell_len, 1), overflow=self.overflow)
            line.append_text(source)
            self.out(line)

    def whole_run(self) -> None:
        """Nothing ran in the profiled files: the whole run's hottest lines instead, and
        how to report the code they are in."""
        self.out(Text())
        self.out(Text("No samples landed in profiled code.", style=STYLES["heading"]))
        top = whole_run.hottest_frames(self.profile, max(self.rep.top, 5))
        if not top:
            self.say(
                "The run may have been too short, or its time was spent outside the "
                "profiled files (--profile-all reports every file)."
            )
            return
        self.out(Text())
        self.out(Text("Hottest lines of the whole run, libraries included", style="bold"))
        locations = [whole_run.short_location(f.path, f.lineno) for f in top]
        loc_w = min(max(len(x) for x in locations), 36)
        for frame, loc in zip(top, locations):
            line = Text("  ")
            line.append_text(
                self.pct_cell(frame.percent, frame.samples < self.rep.min_samples, "bold")
            )
            line.append("  " + shorten_path(loc, loc_w, self.g.ellipsis).ljust(loc_w) + "  ")
            name = Text(frame.function, style=STYLES["muted"])
            name.truncate(max(self.width - line.cell_len, 1), overflow=self.overflow)
            line.append_text(name)
            self.out(line)
        self.out(Text())
        self.say(
            "These lines are outside the files profiled as your code. To report them line by "
            "line: --profile-all (every file), --profile-only SUBSTR (files whose path holds "
            "SUBSTR) or --program-path DIR (the directory of your code)."
        )

    def threads(self) -> None:
        from spyglass.reporters.terminal_threads import render_threads

        gpu, self.gpu = self.gpu, None  # GPU figures are per line, not per thread
        render_threads(self)
        self.gpu = gpu

    def notes(self, parts: Sequence[str]) -> None:
        """``parts`` joined by dots, in as few lines as fit the width (a part wider than
        the width is wrapped, never cut)."""
        glue = f" {self.g.dot} "
        line = ""
        for part in parts:
            if line and len(line) + len(glue) + len(part) > self.width:
                self.say(line)
                line = ""
            line = f"{line}{glue}{part}" if line else part
        if line:
            self.say(line)

    def render(self, profile_path: str | None) -> None:
        self.header()
        shares = proc.file_share(self.profile)
        if self.rep.tree:
            from spyglass.reporters.terminal_tree import render_tree

            gpu, self.gpu = self.gpu, None  # nor per call-tree node
            render_tree(self)
            self.gpu = gpu
        elif draws_on_stacks(self.profile):
            self.whole_run()
        else:
            top = proc.top_lines(self.profile, self.rep.top)
            if len(shares) > 1 and top:
                self.hottest(top)
            top_memory = proc.top_lines(self.profile, self.rep.top, by="memory")
            if len(shares) > 1 and top_memory:
                self.hottest(top_memory, by_memory=True)
            always = {
                (r.path, r.lineno) for r in proc.lines_that_matter(self.profile, self.rep.top)
            }
            for share in shares:
                self.file_section(share, always)
            terminal_native.render_table(self)
        if self.mem is not None:
            for line in tm.leak_lines(self.profile, width=self.width, overflow=self.overflow):
                self.out(line)
        tests = terminal_tests.test_entries(self.profile)
        if tests:
            self.out(Text())
            for row in terminal_tests.tests_table(tests, terminal_tests.TOP_TESTS, self.width):
                self.out(Text(row))
        tasks = terminal_task_types.task_rows(self.profile)
        if tasks:  # a cluster job's: which task type spent what
            self.out(Text())
            for row in terminal_task_types.tasks_table(tasks, terminal_task_types.TOP_TASKS):
                self.out(Text(row))
        self.threads()
        terminal_tasks.render_tasks(self)
        self.out(Text())
        notes = [f"% = share of all CPU time ({fmt_seconds(self.total, space=True) or '0 s'})"]
        if self.rough_shown:
            notes.append(f"{ROUGH} = fewer than {self.rep.min_samples} samples, rough")
        self.notes(notes)  # whole parts on each line: a legend is never cut
        if self.mem is not None:
            self.notes(tm.notes(self.mem))
        if self.gpu is not None:
            self.notes(tg.notes(self.profile))
            for sentence in tg.summary(self.profile):
                self.say(sentence)
        if profile_path:
            line = Text("Profile written to ")
            line.append(profile_path, style=STYLES["path"])
            hint = f" {self.g.dot} spyglass view {profile_path} shows it again"
            if line.cell_len + len(hint) <= self.width:  # left out, never cut
                line.append(hint, style=STYLES["muted"])
            # A long path is left whole for the terminal to wrap: one folded here would
            # not paste back as a path.
            self.console.print(line, soft_wrap=True)


class TerminalReporter(Reporter["Profile"]):
    """Renders a profile as text for a terminal or a pipe.

    ``color``, ``width`` and ``unicode`` left at None are decided by the stream written to
    (colour on a terminal, unless NO_COLOR; the terminal's width; Unicode glyphs when it
    takes UTF-8); for ``render`` (a file), no colour, PIPE_WIDTH (or COLUMNS) and Unicode.
    ``profile_path`` is where the profile was written, named at the end of the report."""

    name = "terminal"
    extensions = (".txt",)

    def __init__(
        self,
        *,
        color: bool | None = None,
        width: int | None = None,
        unicode: bool | None = None,
        profile_path: str | None = None,
        min_percent: float = proc.MIN_PERCENT,
        min_samples: int = proc.MIN_SAMPLES,
        top: int = 5,
        max_functions: int = 12,
        group_threads: bool = True,
        tree: bool = False,
        plain_text: bool = False,
    ) -> None:
        self.color = color
        self.width = width
        self.unicode = unicode
        self.profile_path = profile_path
        self.min_percent = min_percent
        self.group_threads = group_threads
        self.tree = tree  # the call tree instead of the files' lines
        self.min_samples = min_samples
        self.top = top
        self.max_functions = max_functions
        # The caller knows that no string of the profile needs escaping (see
        # safe_text.dumped_json_is_plain): the report then shows the profile as it is.
        self.plain_text = plain_text

    def render(self, doc: Profile) -> str:
        page = io.StringIO()
        self._lay_out(doc, page, color=bool(self.color))
        return page.getvalue()

    def write_stream(self, doc: Profile, out: IO[Any]) -> None:
        """Write the report to ``out`` as it is laid out; a closed pipe raises
        BrokenPipeError."""
        color = should_use_color(out) if self.color is None else self.color
        self._lay_out(doc, out, color=color)
        out.flush()

    def _lay_out(self, profile: Profile, out: IO[str], *, color: bool) -> None:
        console = make_console(out, width=report_width(out, self.width), color=color)
        unicode = supports_unicode(out) if self.unicode is None else self.unicode
        path = None if self.profile_path is None else escape_text(self.profile_path)
        # Text for people: the data's control characters are shown escaped (safe_text).
        data = profile if self.plain_text else escape_data(profile)
        _Report(data, console, UNICODE if unicode else ASCII, self).render(path)


__all__ = ["ASCII", "UNICODE", "TerminalReporter", "fmt_percent", "fmt_seconds", "shorten_path"]
