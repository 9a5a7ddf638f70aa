"""The program sees no trace of spyglass: what it writes (stdout, stderr, files) and its exit
status are byte for byte what plain python gives, for programs that fork, run threads,
turn warnings into errors, run in development mode, trace or profile themselves, or dump
their own stacks with faulthandler."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import Runner, line_figures, load_profile, stdout_json

PROGRAMS = {
    "fork": """
        import os
        pid = os.fork()
        if pid == 0:
            with open("child.txt", "w") as f:
                f.write("child ran\\n")
            os._exit(7)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status))
        print(open("child.txt").read(), end="")
    """,
    "fork_from_thread": """
        import os, threading
        def forker():
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
        sum(range(3_000_000))
        t = threading.Thread(target=forker)
        t.start()
        t.join()
        print("forked from a thread")
    """,
    "threads": """
        import threading
        out = []
        def work(i):
            out.append(sum(range(100_000 * (i + 1))))
        ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in ts: t.start()
        for t in ts: t.join()
        print(sorted(out), threading.active_count())
    """,
    "settrace": """
        import sys
        lines = 0
        def tracer(frame, event, arg):
            global lines
            if event == "line":
                lines += 1
            return tracer
        def f():
            total = 0
            for i in range(1000):
                total += i
            return total
        sys.settrace(tracer)
        f()
        sys.settrace(None)
        print("traced lines", lines)
    """,
    "setprofile": """
        import sys
        calls = []
        def prof(frame, event, arg):
            if event == "call":
                calls.append(frame.f_code.co_name)
        def g(): return 1
        def f(): return g() + g()
        sys.setprofile(prof)
        f()
        sys.setprofile(None)
        print(calls)
    """,
    "faulthandler": """
        import faulthandler, sys
        def inner():
            faulthandler.dump_traceback(file=sys.stdout, all_threads=False)
        def outer():
            inner()
        outer()
    """,
    "own_traceback": """
        import inspect
        def where():
            return [f.function for f in inspect.stack()]
        print(where())
        raise ValueError("the program's own error")
    """,
    "thread_stack": """
        import faulthandler, inspect, sys, threading, traceback
        def work():
            traceback.print_stack(file=sys.stdout)
            print([f.function for f in inspect.stack()])
            faulthandler.dump_traceback(file=sys.stdout, all_threads=False)
        t = threading.Thread(target=work)
        t.start()
        t.join()
    """,
    "wrapped_bootstrap": """
        import threading
        # A library wrapping the method a thread starts in, then setting it back.
        orig = threading.Thread._bootstrap_inner
        def mine(self):
            print("wrapped", self.name)
            orig(self)
        threading.Thread._bootstrap_inner = mine
        t = threading.Thread(target=lambda: print("ran"), name="w")
        t.start(); t.join()
        threading.Thread._bootstrap_inner = orig
        t = threading.Thread(target=lambda: print("ran again"))
        t.start(); t.join()
    """,
    "own_warning": """
        import warnings
        warnings.warn("the program's own warning", UserWarning)
        print("after the warning")
    """,
}

ENVIRONMENTS = {
    "plain": {},
    "dev_mode": {"PYTHONDEVMODE": "1"},
    "warnings_are_errors": {"PYTHONWARNINGS": "error"},
}


def spyglass_package_dir() -> str:
    """Where the installed package lives, as the programs under test import it."""
    return subprocess.run(
        [sys.executable, "-c", "import os, spyglass; print(os.path.dirname(spyglass.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def _without_pids(stderr: bytes) -> bytes:
    """Python's fork warning names the forking process, whose pid differs between runs."""
    return re.sub(rb"\(pid=\d+\)", b"(pid=N)", stderr)


@pytest.mark.parametrize("env_name", sorted(ENVIRONMENTS))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_output_is_plain_pythons(
    runner: Runner, tmp_path: Path, name: str, env_name: str
) -> None:
    script = tmp_path / f"{name}.py"
    script.write_text(textwrap.dedent(PROGRAMS[name]))
    env = {**runner.env, **ENVIRONMENTS[env_name]}
    plain_dir = tmp_path / "plain"
    profiled_dir = tmp_path / "profiled"
    plain_dir.mkdir()
    profiled_dir.mkdir()
    plain = runner.python([script], cwd=plain_dir, env=env, text=False)
    profiled, profile = runner.spyglass(
        [script], cwd=profiled_dir, env=env, text=False, outfile=tmp_path / "p.json"
    )
    assert profile is not None
    assert profiled.returncode == plain.returncode, profiled.stderr.decode(errors="replace")
    assert profiled.stdout == plain.stdout
    assert _without_pids(profiled.stderr) == _without_pids(plain.stderr)
    written = {p.name: p.read_bytes() for p in plain_dir.iterdir()}
    assert {p.name: p.read_bytes() for p in profiled_dir.iterdir()} == written


def test_fork_programs_would_have_warned_if_multithreaded(runner: Runner, tmp_path: Path) -> None:
    """The check above can fail: a program that really is multi-threaded when it forks gets
    Python's warning (3.12+) under plain python and under spyglass alike."""
    script = tmp_path / "mt_fork.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, threading, time
            stop = threading.Event()
            t = threading.Thread(target=stop.wait)
            t.start()
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
            stop.set()
            t.join()
            """
        )
    )
    env = {**runner.env, "PYTHONWARNINGS": "always"}
    plain = runner.python([script], env=env)
    profiled, _ = runner.spyglass([script], env=env)
    warned = "is multi-threaded" in plain.stderr
    assert warned == (sys.version_info >= (3, 12))
    assert ("is multi-threaded" in profiled.stderr) == warned, profiled.stderr


def test_no_frame_of_spyglass_in_the_profile(runner: Runner, tmp_path: Path) -> None:
    """Neither the API's start() and stop() nor the thread hooks leave spyglass's own frames
    in the profile's stacks."""
    script = tmp_path / "api.py"
    out = tmp_path / "api.json"
    script.write_text(
        textwrap.dedent(
            f"""
            import threading, spyglass
            spyglass.start()
            def work():
                return sum(i * i for i in range(300_000))
            ts = [threading.Thread(target=work) for _ in range(20)]
            for t in ts: t.start()
            for t in ts: t.join()
            work()
            spyglass.stop({str(out)!r})
            """
        )
    )
    proc = runner.python([script])
    assert proc.returncode == 0, proc.stderr
    profile = load_profile(out)
    assert profile["samples"] >= 5
    package = str(Path(spyglass_package_dir()))
    own = [f for f in profile["frames"] if f["file"].startswith(package)]
    assert not own, own


def test_waiting_threads_are_read_without_a_thread_of_ours_showing(
    runner: Runner, tmp_path: Path
) -> None:
    """The wait engine reads blocked threads' stacks without taking the GIL: taking it makes
    a thread state of spyglass's own appear, while it is held, in whatever lists the
    interpreter's threads, such as a faulthandler dump ("<no Python frame>"). Dumps every
    2 ms while 30 threads and the main thread wait, each charged wait time every interval,
    list only the program's threads but for a rare dump that meets the GIL taken for
    another reason (call-site tables); the waits must still be charged, to the lines they
    wait on."""
    script = tmp_path / "waiters.py"
    script.write_text(
        textwrap.dedent(
            """
            import faulthandler, sys, tempfile, threading, time
            release = threading.Event()
            threads = [threading.Thread(target=release.wait) for _ in range(30)]
            for t in threads:
                t.start()
            dumps = tempfile.TemporaryFile("w+")
            faulthandler.dump_traceback_later(0.002, repeat=True, file=dumps)
            time.sleep(2.5)  # the main thread's wait
            faulthandler.cancel_dump_traceback_later()
            release.set()
            for t in threads:
                t.join()
            dumps.seek(0)
            text = dumps.read()
            print(text.count("Timeout ("), text.count("<no Python frame>"))
            """
        )
    )
    proc, profile = runner.spyglass([script], outfile=tmp_path / "p.json")
    assert proc.returncode == 0, proc.stderr
    dumps, foreign = (int(n) for n in proc.stdout.split())
    assert dumps >= 100, proc.stdout
    assert foreign <= dumps // 50, f"{foreign} threads without a Python frame in {dumps} dumps"
    assert profile is not None
    main_wait = line_figures(profile, script, "time.sleep(2.5)")["wait_s"]
    assert 2.0 <= main_wait <= 3.0, main_wait
    assert profile["wait_s"] >= 30 * 2.0, profile["wait_s"]


def test_the_gil_is_taken_with_one_thread_state_kept_out_of_sight(
    runner: Runner, tmp_path: Path
) -> None:
    """A thread that was waiting before start() was found by a scan, not registered by
    itself: its waits are read with the GIL, taken every interval. PyGILState_Ensure made
    and freed a thread state each time, and faulthandler's watchdog, walking the thread
    list without a lock, crashed on a freed one (CI saw a segfault under load). One state
    is made for the run and is out of the list while the GIL is not held: dumps every
    millisecond do not crash, show it only in the rare dump that meets the GIL held, and
    the thread's wait is charged."""
    script = tmp_path / "scanned.py"
    script.write_text(
        textwrap.dedent(
            """
            import faulthandler, json, sys, tempfile, threading, time
            import spyglass
            from spyglass import _native
            release = threading.Event()
            early = threading.Thread(target=release.wait)
            early.start()
            dumps = tempfile.TemporaryFile("w+")
            spyglass.start()
            faulthandler.dump_traceback_later(0.001, repeat=True, file=dumps)
            time.sleep(1.5)
            faulthandler.cancel_dump_traceback_later()
            profile = spyglass.stop()
            release.set()
            early.join()
            dumps.seek(0)
            text = dumps.read()
            print(json.dumps({
                "made": _native.kept_thread_states_made(),
                "dumps": text.count("Timeout ("),
                "foreign": text.count("<no Python frame>"),
                "wait_by_thread": {str(t["tid"]): t.get("wait_s", 0.0)
                                   for t in profile["threads"]},
                "early": early.native_id,
            }))
            """
        )
    )
    proc = runner.python([script])
    assert proc.returncode == 0, proc.stderr
    seen = stdout_json(proc)
    assert seen["made"] == 1, seen
    assert seen["dumps"] >= 300, seen
    assert seen["foreign"] <= seen["dumps"] // 4, seen
    early_wait = seen["wait_by_thread"].get(str(seen["early"]), 0.0)
    assert 1.0 <= early_wait <= 2.0, seen
