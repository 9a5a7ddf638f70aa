"""`pytest --spyglass`: each test is profiled from its setup to the end of its call, its
limits judged on its own profile, and the tests' profiles added up into one profile of
the session with a per-test breakdown (its `tests` list).

Under xdist each worker adds up its own tests and leaves its profile in a directory the
controller made; the controller merges the workers' profiles (spyglass.profile_model.merging) and
writes the one profile. Fixtures' teardown and collection are not profiled.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Generator
from typing import Any

import pytest

from spyglass import api
from spyglass.integrations import limits as lim
from spyglass.profile_model import memory_figures as memory
from spyglass.profile_model.compact import expanded
from spyglass.profile_model.merging import merge_profiles
from spyglass.reporters.terminal_tests import TOP_TESTS, tests_table
from spyglass.runtime.options import ProfileOptions

# Profiles of tests waiting to be added to the running total: adding up in batches keeps
# memory bounded without merging the total once per test.
BATCH = 32
_WORKER_FILE = "worker-{}.json"


class SuiteProfiler:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.outfile = os.path.abspath(str(config.getoption("spyglass_out")))
        html_dir = config.getoption("spyglass_html")
        self.html_dir = os.path.abspath(str(html_dir)) if html_dir else None
        self.options = ProfileOptions(
            program_paths=[str(config.rootpath)],
            memory=not config.getoption("spyglass_cpu_only"),
        )
        workerinput = getattr(config, "workerinput", None)
        self.worker: str | None = workerinput.get("workerid") if workerinput else None
        self.shared_dir: str | None = (
            workerinput.get("spyglass_dir") if workerinput else tempfile.mkdtemp("-spyglass")
        )
        self.total: dict[str, Any] | None = None
        self.pending: list[dict[str, Any]] = []
        self.tests: list[dict[str, Any]] = []
        self.written: dict[str, Any] | None = None
        self.profiling: str | None = None  # the nodeid of the test being profiled
        # Threads already running as the test started, other than its own (pytest-xdist's
        # I/O thread, a timeout plugin's watcher, a fixture's server): their CPU serving
        # the test is its cost, but their waiting is not.
        self.before: set[int] = set()

    # ----------------------------------------------------------------- xdist controller

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["spyglass_dir"] = self.shared_dir

    # ----------------------------------------------------------------- each test

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.profiling is not None:  # the last test never got to its call (--setup-only)
            api.stop_to_json(program=self.profiling, argv=[])
            self.profiling = None
        if api.is_profiling():  # a test profiling with the API itself: leave it be
            return
        self.before = _threads_but_this_one()
        api.start_with_options(self.options)
        self.profiling = item.nodeid

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if self.profiling != item.nodeid or (call.when == "setup" and report.passed):
            return
        self.profiling = None
        text = api.stop_to_json(program=item.nodeid, argv=[])
        profile: dict[str, Any] = expanded(json.loads(text))
        entry = _test_entry(item.nodeid, profile, report, self.worker, self.before)
        marker = item.get_closest_marker("spyglass")
        if marker is not None and call.when == "call" and report.passed:
            self._judge(item, marker, profile, report, entry)
            entry["outcome"] = report.outcome
        self.tests.append(entry)
        self.pending.append(profile)
        if len(self.pending) >= BATCH:
            self._add_pending()

    def _judge(
        self,
        item: pytest.Item,
        marker: pytest.Mark,
        profile: dict[str, Any],
        report: pytest.TestReport,
        entry: dict[str, Any],
    ) -> None:
        try:
            limits = lim.parse_limits(marker.kwargs)
        except ValueError as e:
            report.outcome = "failed"
            report.longrepr = f"spyglass: bad @pytest.mark.spyglass on {item.nodeid}: {e}"
            return
        entry["limits"] = limits
        over = lim.overruns(profile, limits)
        if not over:
            return
        entry["over"] = [o.name for o in over]
        report.outcome = "failed"
        report.longrepr = lim.failure_message(
            item.nodeid, profile, over, root=str(self.config.rootpath)
        )
        if self.html_dir is not None:
            self._write_html(item.nodeid, profile)

    def _write_html(self, nodeid: str, profile: dict[str, Any]) -> None:
        from spyglass.reporters import get_reporter

        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150] or "test"
        try:
            os.makedirs(self.html_dir or ".", exist_ok=True)
            page = get_reporter("html")
            page.write(profile, os.path.join(self.html_dir or ".", name + page.extensions[0]))
        except OSError as e:
            print(
                f"spyglass: error: cannot write the HTML report of {nodeid}: {e}", file=sys.stderr
            )

    def _add_pending(self) -> None:
        batch = ([self.total] if self.total is not None else []) + self.pending
        self.pending = []
        self.total = _added_up(batch, self.worker or "tests")

    # ----------------------------------------------------------------- the end

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.profiling is not None:  # interrupted in the middle of a test
            api.stop_to_json(program=self.profiling, argv=[])
            self.profiling = None
        if self.pending:
            self._add_pending()
        if self.worker is not None:
            if self.total is not None and self.shared_dir is not None:
                self.total["tests"] = self.tests
                path = os.path.join(self.shared_dir, _WORKER_FILE.format(self.worker))
                with open(path, "w", encoding="utf-8") as fh:
                    json.dump(self.total, fh)
            return
        parts = [self.total] if self.total is not None else []
        labels = ["tests"] if self.total is not None else []
        tests = list(self.tests)
        for path in sorted(glob.glob(os.path.join(self.shared_dir or "", "worker-*.json"))):
            with open(path, encoding="utf-8") as fh:
                part = json.load(fh)
            tests += part.pop("tests", [])
            parts.append(part)
            labels.append(os.path.basename(path)[len("worker-") : -len(".json")])
        if self.shared_dir is not None:
            shutil.rmtree(self.shared_dir, ignore_errors=True)
        if not parts:
            return
        result = parts[0] if len(parts) == 1 else merge_profiles(parts, labels=labels)
        result.pop("sources", None)
        result["program"] = "pytest"
        result["argv"] = ["pytest", *self.config.invocation_params.args]
        result["exit_status"] = int(session.exitstatus)
        result["tests"] = tests
        from spyglass.outfile import write_output
        from spyglass.runtime.output import profile_text

        try:
            write_output(self.outfile, profile_text(result))
        except OSError as e:
            print(
                f"spyglass: error: cannot write the profile to {self.outfile!r}: {e.strerror}",
                file=sys.stderr,
            )
            return
        self.written = result

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.written is None:
            return
        write = terminalreporter.write_line
        terminalreporter.section("spyglass")
        for line in tests_table(self.written["tests"], TOP_TESTS):
            write(line)
        count = len(self.written["tests"])
        write(f"profile of {count} tests written to {self.outfile} (spyglass view shows it)")


def _added_up(profiles: list[dict[str, Any]], label: str) -> dict[str, Any]:
    """One profile of `profiles` (tests of one process) whose threads keep their names."""
    if len(profiles) == 1:
        return profiles[0]
    total = merge_profiles(profiles, labels=[label] * len(profiles))
    total.pop("sources", None)
    total.pop("elapsed_s_total", None)
    prefix = f"{label}: "  # merging names threads after their input: all are this process's
    for thread in total["threads"]:
        while str(thread["name"]).startswith(prefix):
            thread["name"] = thread["name"][len(prefix) :]
    return total


def _threads_but_this_one() -> set[int]:
    """The native ids of this process's other threads."""
    import threading

    try:
        tids = {int(name) for name in os.listdir("/proc/self/task")}
    except (OSError, ValueError):
        return set()
    return tids - {threading.get_native_id()}


def _test_entry(
    nodeid: str,
    profile: dict[str, Any],
    report: pytest.TestReport,
    worker: str | None,
    before: set[int] | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"nodeid": nodeid, "outcome": report.outcome}
    if worker is not None:
        entry["worker"] = worker
    entry["elapsed_s"] = float(profile["elapsed_s"])
    for key in ("cpu_python_s", "cpu_native_s", "cpu_system_s", "wait_s", "samples"):
        entry[key] = profile[key]
    # A test waited as long as its own threads did: under pytest-xdist, execnet's I/O
    # thread waits for the whole of every test, and a test that slept 0.3 s showed 0.6 s.
    threads = profile.get("threads") or []
    before = before or set()
    others = sum(float(t.get("wait_s") or 0.0) for t in threads if t.get("tid") in before)
    entry["wait_s"] = max(0.0, float(profile["wait_s"]) - others)
    if memory.is_profiled(profile):
        entry["mem_alloc_mb"] = memory.alloc_mb(profile)
        entry["max_footprint_mb"] = float(profile.get("max_footprint_mb") or 0.0)
        entry["copy_mb"] = memory.copy_mb(profile)
    return entry
