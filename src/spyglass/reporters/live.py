"""`spyglass run --live`: a view of the run so far on the terminal, redrawn in place about
once a second while the program runs (like `py-spy top`), from the same merged profile
that `--snapshot-every` writes (runtime/fragments.snapshot_run). The supervisor drives it
from its own loop (runtime/supervisor.py): no thread of its own, no signal handler.

The program shares the terminal and goes on writing to it: the view keeps to the bottom
rows, which it takes out of the terminal's scrolling region, so that the program's output
scrolls above it untouched, and each redraw puts the cursor back where the program left
it. When the program ends, the rows are cleared and given back, and the report follows."""

from __future__ import annotations

import io
import os
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from spyglass.profile_model import memory_figures as memory
from spyglass.profile_model import queries as proc
from spyglass.profile_model.io import Profile
from spyglass.reporters.terminal_text import STYLES, fmt_percent, fmt_seconds
from spyglass.safe_text import escape_text

REFRESH_S = 1.0
TOP_LINES = 10
TOP_FUNCTIONS = 5
MAX_ROWS = 22  # of the terminal's rows, at most half are taken
SAVE, RESTORE = "\x1b7", "\x1b8"  # the cursor, where the program's output goes on


class LiveView:
    """The live view on the terminal `fd` (stderr's): ``update()`` redraws it."""

    refresh_s = REFRESH_S

    def __init__(self, fd: int = 2, *, color: bool = True) -> None:
        self.fd = fd
        self.color = color
        self.rows = self.columns = self.height = 0
        self._last: list[str] = ["spyglass: waiting for the first samples…"]
        self._take_rows()
        if not self.height:
            raise ValueError("the terminal is too small for it")

    def _take_rows(self) -> None:
        """Takes the bottom rows for the view (none on a terminal too small for it)."""
        size = os.get_terminal_size(self.fd)
        self.rows, self.columns = size.lines, size.columns
        self.height = min(MAX_ROWS, self.rows // 2)
        if self.height < 3 or self.columns < 40:
            self.height = 0
            return
        # Room for the view under the cursor, then the rows above it scroll on their own.
        # Setting the region moves the cursor: it is put back.
        top_rows = self.rows - self.height
        self._write("\n" * self.height + f"\x1b[{self.height}A{SAVE}\x1b[1;{top_rows}r{RESTORE}")
        self._draw(self._last)

    def update(self, profile: Profile | None) -> None:
        if profile is not None and self.height:
            self._last = self._render(profile)
            self._draw(self._last)

    def resized(self) -> None:
        """The terminal changed size (SIGWINCH): the view moves to its new bottom rows."""
        self.stop()
        self._take_rows()

    def stop(self) -> None:
        """Clears the view and gives its rows back to the program's output."""
        if self.height:
            self._draw([])
            self._write(f"{SAVE}\x1b[r{RESTORE}")

    def _render(self, profile: Profile) -> list[str]:
        console = Console(
            file=io.StringIO(),
            width=self.columns,
            force_terminal=self.color,
            no_color=not self.color,
            highlight=False,
        )
        with console.capture() as captured:
            console.print(render(profile, self.columns), crop=True, overflow="ellipsis")
        return captured.get().splitlines()

    def _draw(self, lines: list[str]) -> None:
        # One write: the program writing at the same time could otherwise land in the view.
        first = self.rows - self.height + 1
        out = [SAVE]
        for i in range(self.height):
            out.append(f"\x1b[{first + i};1H\x1b[2K")
            if i < len(lines):
                out.append(lines[i])
        out.append(RESTORE)
        self._write("".join(out))

    def _write(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        while data:
            data = data[os.write(self.fd, data) :]


def render(profile: Profile, width: int) -> Group:
    return Group(_header(profile), _lines(profile, width), _functions(profile, width))


def _split(times: Any, total: float) -> list[str]:
    python, native, system = proc.breakdown(times, total)
    return [fmt_percent(x) or "" for x in (python, native, system)]


def _header(profile: Profile) -> Text:
    s = proc.summary(profile)
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("spyglass live", style=STYLES["heading"])
    text.append(f" · {escape_text(s.command)}\n")
    facts = [
        f"{fmt_seconds(s.elapsed_s, space=True) or '0 s'} so far",
        f"CPU {fmt_seconds(s.cpu_s, space=True) or '0 s'}",
        f"Python {fmt_percent(s.python_pct) or '0%'}",
        f"native {fmt_percent(s.native_pct) or '0%'}",
        f"system {fmt_percent(s.system_pct) or '0%'}",
        f"wait {fmt_seconds(s.wait_s, space=True) or '0 s'}",
        f"{s.threads} thread{'s' if s.threads != 1 else ''}",
    ]
    footprint = _footprint_mb(profile)
    if footprint is not None:
        peak = float(profile.get("max_footprint_mb") or 0.0)
        facts.append(f"footprint {footprint:.1f} MB (peak {peak:.1f} MB)")
    text.append(" · ".join(facts), style=STYLES["muted"])
    return text


def _footprint_mb(profile: Profile) -> float | None:
    """The sampled footprint now: the last point of the run's footprint timeline."""
    if not memory.is_profiled(profile):
        return None
    timeline = profile.get("footprint_timeline") or []
    return float(timeline[-1][1]) if timeline else 0.0


def _table(title: str, width: int) -> Table:
    table = Table(title=title, title_justify="left", box=None, pad_edge=False, width=width)
    for name in ("CPU", "Python", "native", "system", "wait"):
        table.add_column(name, justify="right", no_wrap=True)
    return table


def _lines(profile: Profile, width: int) -> Table:
    table = _table("Hottest lines", width)
    table.add_column("line", no_wrap=True, overflow="ellipsis")
    table.add_column("source", no_wrap=True, overflow="ellipsis", ratio=1)
    for ref in proc.top_lines(profile, TOP_LINES):
        where = f"{_short(ref.path)}:{ref.lineno}"
        source = str(ref.line.get("source") or "").strip()
        table.add_row(
            fmt_percent(ref.percent) or "",
            *_split(ref.line, proc.total_cpu(profile)),
            fmt_seconds(ref.wait_s) or "",
            escape_text(where),
            escape_text(source),
        )
    return table


def _functions(profile: Profile, width: int) -> Table:
    table = _table("Hottest functions", width)
    table.add_column("function", no_wrap=True, overflow="ellipsis", ratio=1)
    total = proc.total_cpu(profile)
    functions = [
        (path, fn) for path in profile["files"] for fn in proc.top_functions(profile, path)
    ]
    functions.sort(key=lambda pf: -proc.cpu_s(pf[1]))
    for path, fn in functions[:TOP_FUNCTIONS]:
        table.add_row(
            fmt_percent(proc.percent(proc.cpu_s(fn), total)) or "",
            *_split(fn, total),
            fmt_seconds(float(fn["wait_s"])) or "",
            escape_text(f"{fn['name']}  {_short(path)}:{fn['first_lineno']}"),
        )
    return table


def _short(path: str) -> str:
    return os.path.basename(path) if path.startswith("/") else path
