"""The per-test breakdown of a test suite's profile (`pytest --spyglass`), as text lines:
for pytest's terminal summary and for the terminal report."""

from __future__ import annotations

from spyglass.profile_model import queries as proc

TYPE_CHECKING = False  # typing costs the end of every run milliseconds of import
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

TOP_TESTS = 10
MIN_NAME = 24  # columns: a test's name cut shorter says too little


def test_entries(profile: Mapping[str, Any]) -> list[dict[str, Any]]:
    tests = profile.get("tests")
    if not isinstance(tests, list):
        return []
    return [t for t in tests if isinstance(t, dict) and "nodeid" in t and "wait_s" in t]


def tests_table(tests: list[dict[str, Any]], n: int, width: int | None = None) -> list[str]:
    """The `n` tests that used the most CPU, one line each; a test's name is cut from the
    left to fit `width` columns (its end, the test's own name, says most)."""
    heavy = sorted(tests, key=lambda t: -proc.cpu_s(t))[:n]
    mem = any("mem_alloc_mb" in t for t in tests)
    head = f"{'CPU s':>7} {'Python':>7} {'native':>7} {'system':>7} {'wait s':>7}"
    head += f" {'alloc MB':>9} {'peak MB':>8} {'copy MB':>8}" if mem else ""
    lines = [f"tests by CPU ({len(heavy)} of {len(tests)}):", head + "  test"]
    for t in heavy:
        cpu = proc.cpu_s(t)
        row = f"{cpu:7.3f} " + " ".join(
            f"{100 * t[k] / cpu if cpu > 0 else 0.0:6.1f}%"
            for k in ("cpu_python_s", "cpu_native_s", "cpu_system_s")
        )
        row += f" {t['wait_s']:7.3f}"
        if mem:
            row += f" {t.get('mem_alloc_mb', 0.0):9.1f} {t.get('max_footprint_mb', 0.0):8.1f}"
            row += f" {t.get('copy_mb', 0.0):8.1f}"
        status = "" if t["outcome"] == "passed" else f" [{t['outcome']}]"
        name = f"{t['nodeid']}{status}"
        room = (width or 0) - len(row) - 2
        if width is None or len(name) <= room:
            lines.append(f"{row}  {name}")
            continue
        if room >= MIN_NAME:
            lines.append(f"{row}  …{name[-(room - 1) :]}")
            continue
        # Too narrow for both: the name on a line of its own, above its figures.
        lines += [f"  {name[-(width - 2) :]}" if len(name) > width - 2 else f"  {name}", row]
    return lines
