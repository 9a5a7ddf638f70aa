"""Programs that do unusual things behave under `spyglass run` exactly as under plain python
(stdout, exit status, their own signals and timers, the files they write), and spyglass still
profiles them, or says what it gave up.

Each test runs its program both ways and compares what the program shows, then checks
something about the profile. The programs are tests/programs/unusual_*.py; the C fixture
tests/ext/unusual_block.c is built here the way tests/helpers.py builds spin_ext.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    RUN_TIMEOUT_S,
    TESTS_DIR,
    Profile,
    Runner,
    cpu,
    describe,
    figures_at,
    file_entry,
    function_figures,
    line_figures,
    load_profile,
    program,
    source_lineno,
    stdout_json,
    total_cpu,
)

SIGNALS = program("unusual_signals.py")
POLL = program("unusual_poll_no_retry.py")
ASYNCIO = program("unusual_asyncio.py")
MANY_THREADS = program("unusual_many_threads.py")
RECURSION = program("unusual_deep_recursion.py")
EXEC_EVAL = program("unusual_exec_eval.py")
PLAIN_WORK = program("unusual_plain_work.py")
CHDIR = program("unusual_chdir_import.py")
STDIO = program("unusual_stdio.py")
BLOCK_SOURCE = TESTS_DIR / "ext" / "unusual_block.c"


# --------------------------------------------------------------------------- helpers


def build_extension(source: Path, dest: Path) -> Path:
    """Compiles the one-file C extension `source` for the running interpreter into `dest`
    (as tests/helpers.py builds spin_ext); returns `dest`."""
    cc = sysconfig.get_config_var("CC") or ""
    cc_argv = shlex.split(cc) if cc and shutil.which(shlex.split(cc)[0]) else []
    if not cc_argv:
        found = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if found is None:
            pytest.fail(f"no C compiler found to build {source}", pytrace=False)
        cc_argv = [found]
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    target = dest / f"{source.stem}{suffix}"
    include = sysconfig.get_paths()["include"]
    cmd = [*cc_argv, "-O2", "-shared", "-fPIC", f"-I{include}", str(source), "-o", str(target)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if done.returncode != 0:
        pytest.fail(
            f"building {source.name} failed ({shlex.join(cmd)}):\n{done.stdout}{done.stderr}",
            pytrace=False,
        )
    return dest


@pytest.fixture(scope="module")
def block_env(
    tmp_path_factory: pytest.TempPathFactory, child_env: dict[str, str]
) -> dict[str, str]:
    """The children's environment with unusual_block importable."""
    built = build_extension(BLOCK_SOURCE, tmp_path_factory.mktemp("unusual_block"))
    env = dict(child_env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(built), env.get("PYTHONPATH")) if p)
    return env


def both_ways(
    runner: Runner, target: list[Any], **spyglass_kwargs: Any
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str], Profile]:
    """Runs `target` under plain python, then under spyglass; returns both and the profile."""
    env = spyglass_kwargs.get("env")
    plain = runner.python(target, env=env)
    profiled, profile = runner.spyglass(target, **spyglass_kwargs)
    assert profile is not None
    return plain, profiled, profile


def assert_same_outcome(
    plain: subprocess.CompletedProcess[str], profiled: subprocess.CompletedProcess[str]
) -> None:
    assert plain.returncode == 0, f"plain python failed:\n{plain.stderr}"
    assert profiled.returncode == plain.returncode, (
        f"exit status {profiled.returncode} under spyglass, {plain.returncode} under plain "
        f"python\nstderr:\n{profiled.stderr}"
    )


def first_line(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout.splitlines()[0] if proc.stdout else ""


def loop_cpu(profile: Profile, path: Path, marker: str) -> float:
    """CPU of the loop whose body is the line marked `marker`: that line and the `for` line
    just above it (how the two share the time differs between Python versions)."""
    body = source_lineno(path, marker)
    return cpu(line_figures(profile, path, marker)) + cpu(figures_at(profile, path, body - 1))


def stack_frames(profile: Profile, stack: dict[str, Any]) -> list[dict[str, Any]]:
    return [profile["frames"][i] for i in stack["frames"]]


# --------------------------------------------------------------------------- signals, timers, hooks

SIGNAL_CASES = [
    "itimer_real",
    "itimer_virtual",
    "itimer_prof",
    "alarm",
    "pthread_kill",
    "sigwait",
    "faulthandler",
    "setprofile",
    "settrace",
    "monitoring",
    "realtime_own",
]

THREAD_HEADER = re.compile(r"^(Current thread|Thread) 0x[0-9a-f]+ ", re.MULTILINE)
INNERMOST_LINE = re.compile(r"(most recent call first\):\n\s+File .*, line )\d+")


def faulthandler_dump(path: Path) -> list[str]:
    """A faulthandler dump with what differs from run to run blanked: the thread addresses,
    and where the timeout caught the spinning thread (inside spin_once or between two calls
    of it, on its caller's loop line)."""
    text = path.read_text(encoding="utf-8")
    text = INNERMOST_LINE.sub(r"\1N", THREAD_HEADER.sub(r"\1 0xADDR ", text))
    lines = [line for line in text.splitlines() if not line.endswith(" in spin_once")]
    return [
        re.sub(r"line \d+ in faulthandler_case$", "line N in faulthandler_case", line)
        for line in lines
    ]


EXPIRIES = 20  # unusual_signals.py's EXPIRIES
TIMER_ATTEMPTS = 5

SignalRun = tuple[
    "subprocess.CompletedProcess[str]", "subprocess.CompletedProcess[str]", Path, Path, Path
]


def run_signal_case(runner: Runner, case: str) -> SignalRun:
    """Runs unusual_signals.py CASE under plain python and under spyglass: both processes,
    the two files the program was given, and the profile's path."""
    plain_dump, profiled_dump = runner.new_path("dump", ".txt"), runner.new_path("dump", ".txt")
    plain = runner.python([SIGNALS, case, plain_dump])
    outfile = runner.new_path("profile")
    profiled, _ = runner.spyglass(
        [SIGNALS, case, profiled_dump], outfile=outfile, expect_profile=False
    )
    return plain, profiled, plain_dump, profiled_dump, outfile


def timer_problems(case: str, reports: dict[str, dict[str, Any]]) -> list[str]:
    """What is wrong with the timer counts of both runs (empty: nothing)."""
    problems = []
    for who, report in reports.items():
        if report["exact"]["signals"] is not True:
            problems.append(f"{case} under {who}: a foreign signal was handled: {report}")
        elif report["expected"] != EXPIRIES:
            problems.append(f"{case} under {who}: the timer stopped: {report}")
        elif abs(report["fired"] - report["expected"]) > 1:
            problems.append(
                f"{case} under {who}: the handler ran {report['fired']} times for "
                f"{report['expected']} expiries of the timer it saw"
            )
    return problems


@pytest.mark.parametrize("case", SIGNAL_CASES)
def test_programs_own_signals_timers_and_hooks(runner: Runner, case: str) -> None:
    """The program's own setitimer timers (all three clocks), alarm, pthread_kill, a signal it
    blocks and takes with sigwait, faulthandler and its sys.setprofile / sys.settrace /
    sys.monitoring hooks work as under plain python: spyglass's timers are per-thread CPU
    timers on a signal of their own, and it installs no hook of its own.

    The timer counts are exact (±1) on a quiet machine; on a busy one Python itself can run
    one handler for two signals, plain python included (8 plain runs of itimer_real on a
    shared machine: 16 to 20 runs of the handler for 20 expiries), so a timer case is tried
    up to five times and must come out right, both ways, once."""
    if case == "monitoring" and sys.version_info < (3, 12):
        pytest.skip("sys.monitoring is new in Python 3.12")
    attempts = TIMER_ATTEMPTS if case.startswith("itimer_") else 1
    problems: list[str] = []
    for _ in range(attempts):
        plain, profiled, plain_dump, profiled_dump, outfile = run_signal_case(runner, case)
        assert_same_outcome(plain, profiled)
        assert outfile.exists(), f"no profile written\nstderr:\n{profiled.stderr}"
        seen_plain, seen = stdout_json(plain), stdout_json(profiled)
        print(f"\n{case}: plain {seen_plain}\n{case}: spyglass {seen}")
        if not case.startswith("itimer_"):
            break
        found = timer_problems(case, {"plain python": seen_plain, "spyglass": seen})
        if not found:
            break
        problems += found
    else:
        pytest.fail("\n".join(problems), pytrace=False)
    profile = load_profile(outfile)
    assert first_line(profiled) == first_line(plain) == f"case {case} done"
    assert seen["exact"] == seen_plain["exact"], f"{case}: {seen} under spyglass"

    if case.startswith("itimer_"):
        spin = function_figures(profile, "spin_once", SIGNALS)
        assert spin["samples"] >= 3, describe(spin)
    elif case == "alarm":
        assert seen["exact"]["outcome"] == "interrupted by the alarm"
        assert 0.9 <= seen["elapsed_s"] < 3.0, seen
        # The sleep the alarm cut short is wait on that line, not CPU.
        sleep = line_figures(profile, SIGNALS, "# signals:alarm-sleep")
        assert sleep["wait_s"] >= 0.5, describe(sleep)
        assert cpu(sleep) < 0.1, describe(sleep)
    elif case == "pthread_kill":
        assert seen["exact"]["handled_in"] == ["MainThread"] * 10
        worker = line_figures(profile, SIGNALS, "# signals:worker")
        assert worker["samples"] >= 2, describe(worker)
        assert len(profile["threads"]) >= 2, profile["threads"]
    elif case == "realtime_own":
        # The sampler's signals went to the program's handler (60 of them) and the
        # sampling stopped: now the handler sees its own 5, and the loop is profiled.
        assert seen["exact"]["sent"] == seen["exact"]["handled"] == 5, seen
        # (previous, now), as plain python shows them (compared above)
        assert ["a handler", "default"] in seen["exact"]["shown"], seen
        spin = function_figures(profile, "spin_once", SIGNALS)
        assert spin["samples"] >= 20, describe(spin)
    elif case == "sigwait":
        assert seen["exact"]["got"] == "SIGUSR1"
        assert function_figures(profile, "spin_once", SIGNALS)["samples"] >= 1
    elif case == "faulthandler":
        assert seen["exact"]["enabled"] is True
        expected, got = faulthandler_dump(plain_dump), faulthandler_dump(profiled_dump)
        assert expected[0].startswith("Timeout (0:00:00.2"), expected
        own = [line for line in got if str(SIGNALS) in line]
        assert own == [line for line in expected if str(SIGNALS) in line], (
            "the dump of the program's own frames differs:\n" + "\n".join(got)
        )
        assert len(THREAD_HEADER.findall("\n".join(got))) == len(
            THREAD_HEADER.findall("\n".join(expected))
        ), "the dump lists another number of threads:\n" + "\n".join(got)
        spin = function_figures(profile, "spin_once", SIGNALS)
        assert spin["samples"] >= 3, describe(spin)
        # The program runs in an interpreter of its own, as with plain python: nothing of
        # spyglass is on its stack, so the dump is the very same.
        assert got == expected, "faulthandler's dump differs:\n" + "\n".join(got)
    else:  # setprofile, settrace, monitoring: a tiny tool counting events
        assert seen["counts"], seen
        assert sorted(seen["counts"]) == sorted(seen_plain["counts"])
        for event, count in seen_plain["counts"].items():
            assert abs(seen["counts"][event] - count) <= 0.05 * count, (
                f"{case}: {seen['counts'][event]} {event} events under spyglass, {count} under "
                "plain python"
            )
        hooked = file_entry(profile, SIGNALS)  # the workload and the hook itself
        assert hooked["samples"] >= 3, describe(hooked)


# --------------------------------------------------------------------------- EINTR


def test_blocking_c_call_without_eintr_retry_is_not_interrupted(
    runner: Runner, block_env: dict[str, str]
) -> None:
    """A C library call that does not retry on EINTR (poll() on an idle pipe, 300 ms, GIL
    released) returns 0 (timeout) every time, while another thread computes in Python and is
    sampled: spyglass's timers run on each thread's own CPU clock and signal that thread only,
    so a thread blocked in a system call is never interrupted."""
    plain, profiled, profile = both_ways(runner, [POLL], env=block_env)
    assert_same_outcome(plain, profiled)
    result = stdout_json(profiled)
    interrupted = [call for call in result["calls"] if call != [0, 0]]
    assert len(result["calls"]) == 20
    assert not interrupted, (
        f"{len(interrupted)} of 20 poll() calls did not time out normally under spyglass "
        f"(result, errno): {interrupted}"
    )
    assert result["shortest_ms"] >= 299, f"a poll() returned early: {result}"
    assert profiled.stdout.splitlines()[:-1] == plain.stdout.splitlines()[:-1]
    # The burner was profiled all along; the pollers' time is wait on their call line.
    burn = line_figures(profile, POLL, "# poll:burn")
    assert burn["samples"] >= 10, describe(burn)
    call = line_figures(profile, POLL, "# poll:call")
    assert call["wait_s"] >= 3.0, describe(call)  # 4 threads x 5 x 0.3 s = 6 s
    assert cpu(call) < 0.1, describe(call)


# --------------------------------------------------------------------------- asyncio


def test_asyncio_cpu_goes_to_the_coroutines_lines(runner: Runner) -> None:
    plain, profiled, profile = both_ways(runner, [ASYNCIO])
    assert_same_outcome(plain, profiled)
    assert profiled.stdout == plain.stdout
    assert plain.stdout.count("5 rounds") == 4
    crunch = function_figures(profile, "crunch", ASYNCIO)
    share = cpu(crunch) / total_cpu(profile)
    print(f"\nasyncio: crunch() has {share:.1%} of CPU")
    assert share >= 0.6, f"crunch(): {describe(crunch)}; total {describe(profile)}"
    hot = line_figures(profile, ASYNCIO, "# asyncio:hot")
    assert hot["samples"] >= 3, describe(hot)
    assert loop_cpu(profile, ASYNCIO, "# asyncio:hot") >= 0.8 * cpu(crunch), describe(crunch)
    # Every CPU sample of the coroutine has the event loop below it in its stack. (Time a
    # task spent suspended is on stacks of its await chain alone: await_s, no CPU.)
    for stack in profile["stacks"]:
        frames = stack_frames(profile, stack)
        if (
            frames
            and cpu(stack) > 0
            and frames[-1]["file"] == str(ASYNCIO)
            and frames[-1]["function"].endswith("crunch")
        ):
            assert any(f["file"].endswith(os.path.join("asyncio", "events.py")) for f in frames)


# --------------------------------------------------------------------------- many threads

THREADS = 200
CPU_EACH_S = 0.005
MANY_THREADS_INTERVAL_S = 0.002


def test_two_hundred_threads(runner: Runner) -> None:
    """200 threads of 5 ms CPU each. A thread's last partial interval is lost when it ends
    (docs/cpu-sampling.md, known limits), so at the default 10 ms interval such short threads
    leave next to nothing in the profile: the run uses a 2 ms interval, and the profile must
    then hold most of their CPU and list most of them."""
    target = [MANY_THREADS, str(THREADS), str(CPU_EACH_S)]
    options = ["--interval", str(MANY_THREADS_INTERVAL_S)]
    plain, profiled, profile = both_ways(runner, target, options=options)
    assert_same_outcome(plain, profiled)
    assert (
        first_line(profiled)
        == first_line(plain)
        == f"{THREADS} of {THREADS} threads finished their work"
    )
    threads_cpu = stdout_json(profiled)["threads_cpu_s"]
    threads = profile["threads"]
    named = [t for t in threads if (t["name"] or "").startswith("t")]
    print(
        f"\n{len(threads)} threads listed ({len(named)} of the workers), "
        f"{sum(t['samples'] > 0 for t in threads)} with samples; profile CPU "
        f"{total_cpu(profile):.3f} s, the threads' own {threads_cpu:.3f} s"
    )
    assert len(named) >= 150, f"only {len(named)} of {THREADS} threads in the profile"
    # Totals: the threads add up to the process, and hold most of the CPU the workers used.
    for key in ("cpu_python_s", "cpu_native_s", "cpu_system_s", "samples"):
        assert sum(t[key] for t in threads) == pytest.approx(profile[key], rel=1e-6, abs=1e-6)
    # Each thread loses the CPU since its last sample, less than one 4 ms tick (timers expire
    # on ticks; 250 Hz kernel): about 2 ms of its 5 ms on average, at worst 4 ms.
    assert total_cpu(profile) >= 0.35 * threads_cpu, describe(profile)
    assert total_cpu(profile) <= 3 * threads_cpu + 0.5, describe(profile)
    work = function_figures(profile, "work", MANY_THREADS)
    assert cpu(work) >= 0.8 * cpu(file_entry(profile, MANY_THREADS)), describe(work)
    assert cpu(work) >= 0.3 * threads_cpu, describe(work)


# --------------------------------------------------------------------------- deep recursion

# docs/profile-format.md: a deeper stack keeps its 96 innermost and 32 outermost frames.
MAX_STACK_DEPTH = 128
OUTER_FRAMES = 32


def test_deep_recursion_is_truncated_and_keeps_the_bottom(runner: Runner) -> None:
    plain, profiled, profile = both_ways(runner, [RECURSION])
    assert_same_outcome(plain, profiled)
    assert profiled.stdout == plain.stdout
    assert plain.stdout.startswith("depth 3000: result ")
    bottom = function_figures(profile, "bottom", RECURSION)
    hot = line_figures(profile, RECURSION, "# recursion:bottom")
    assert cpu(bottom) >= 0.7 * total_cpu(profile), describe(bottom)
    assert hot["samples"] >= 3, describe(hot)
    assert loop_cpu(profile, RECURSION, "# recursion:bottom") >= 0.8 * cpu(bottom), describe(hot)
    bottom_line = source_lineno(RECURSION, "# recursion:bottom")
    deep = [
        stack_frames(profile, s)
        for s in profile["stacks"]
        if stack_frames(profile, s)[-1]["function"] == "bottom"
    ]
    assert deep, "no stack ends in bottom()"
    for frames in deep:
        assert frames[0]["file"] == "<truncated>", f"not marked truncated: {frames[:3]}"
        assert len(frames) - 1 == MAX_STACK_DEPTH, len(frames)
        outer, inner = frames[1 : 1 + OUTER_FRAMES], frames[1 + OUTER_FRAMES : -1]
        assert [f["function"] for f in outer[:2]] == ["<module>", "main"], outer[:3]
        assert all(f["function"].endswith("descend") for f in outer[2:] + inner)
    assert any(frames[-1]["lineno"] == bottom_line for frames in deep)


# --------------------------------------------------------------------------- exec, eval, generated


def test_exec_eval_and_generated_code_go_to_the_calling_lines(runner: Runner) -> None:
    """Code run by exec/eval has "<string>" for its file, code compiled by the program under
    a name of its own "<generated>": neither is a file of the program. With the default
    program path their time is charged to the line of the program's file that ran them (as
    library time is), and their own frames are kept, under those pseudo-file names, in the
    stacks (flame graphs). With --profile-all, "<string>" and "<generated>" are files of the
    profile of their own. (`spyglass run -c CODE` reports "<string>" by default: there it is
    the program.)"""
    plain, profiled, profile = both_ways(runner, [EXEC_EVAL])
    assert_same_outcome(plain, profiled)
    assert profiled.stdout == plain.stdout
    assert "<string>" not in profile["files"] and "<generated>" not in profile["files"], sorted(
        profile["files"]
    )
    calls = {
        marker: line_figures(profile, EXEC_EVAL, f"# exec:{marker}")
        for marker in ("exec-call", "eval-call", "generated-call")
    }
    main = function_figures(profile, "main", EXEC_EVAL)
    print("\n" + "\n".join(f"{m}: {describe(f)}" for m, f in calls.items()))
    for marker, figures in calls.items():
        assert figures["samples"] >= 2, f"{marker}: {describe(figures)}"
    assert sum(cpu(f) for f in calls.values()) >= 0.9 * cpu(main), describe(main)
    assert cpu(main) >= 0.7 * total_cpu(profile), describe(main)
    # In the stacks, each pseudo-file's frames sit above the calling line.
    callers = {}
    for stack in profile["stacks"]:
        frames = stack_frames(profile, stack)
        for outer, inner in zip(frames, frames[1:]):
            if outer["file"] == str(EXEC_EVAL) and inner["file"] in ("<string>", "<generated>"):
                callers.setdefault(inner["file"], set()).add(outer["lineno"])
    assert callers.get("<generated>") == {source_lineno(EXEC_EVAL, "# exec:generated-call")}
    assert callers.get("<string>") == {
        source_lineno(EXEC_EVAL, "# exec:exec-call"),
        source_lineno(EXEC_EVAL, "# exec:eval-call"),
    }
    # With --profile-all they are reported as pseudo-files of their own (no source text).
    _, every = runner.spyglass([EXEC_EVAL], options=["--profile-all"])
    assert every is not None
    generated = function_figures(every, "generated_work", "<generated>")
    assert generated["samples"] >= 2, describe(generated)
    assert file_entry(every, "<string>")["samples"] >= 2


# --------------------------------------------------------------------------- unusual paths


def test_non_ascii_script_name_in_a_directory_with_spaces(runner: Runner) -> None:
    where = runner.workdir / "dir with spaces" / "ünïcødé 目录"
    where.mkdir(parents=True)
    script = where / "naïve script 日本.py"
    shutil.copyfile(PLAIN_WORK, script)
    sibling = where / "módulo_ñ.py"
    sibling.write_text(
        "def sibling_work():\n"
        "    n = 0\n"
        "    for i in range(3_000_000):\n"
        "        n = (n + i * 13) % 1_000_003  # plain:sibling\n"
        "    return n\n",
        encoding="utf-8",
    )
    plain = runner.python([script, "módulo_ñ"])
    profiled, profile = runner.spyglass([script, "módulo_ñ"], report=True)
    assert profile is not None
    assert_same_outcome(plain, profiled)
    assert profiled.stdout == plain.stdout
    assert stdout_json(plain)["main"] == str(script)
    files = profile["files"]
    for path, marker in ((script, "# plain:local"), (sibling, "# plain:sibling")):
        assert str(path) in files, f"{path} is not a key of the profile: {sorted(files)}"
        text = path.read_text(encoding="utf-8").splitlines()
        for line in files[str(path)]["lines"]:
            assert line["source"] == text[line["lineno"] - 1], line
        hot = line_figures(profile, path, marker)
        assert hot["samples"] >= 3, f"{path.name}: {describe(hot)}"
    assert profile["program"] == str(script)
    # The report names the file as it is.
    assert script.name in profiled.stderr, profiled.stderr[-2000:]


def test_chdir_and_sys_path_change_then_import(runner: Runner) -> None:
    """The program moves elsewhere, puts "." on sys.path and imports a module from there;
    the module is profiled, and the profile goes to the -o path as given, relative to the
    directory spyglass was started in."""
    project = runner.workdir / "project"
    moved = project / "moved"
    start = runner.workdir / "start"
    for d in (moved, start / "out"):
        d.mkdir(parents=True)
    script = project / CHDIR.name
    shutil.copyfile(CHDIR, script)
    (moved / "moved_mod.py").write_text(
        "def moved_work():\n"
        "    n = 0\n"
        "    for i in range(1_500_000):\n"
        "        n = (n + i * 17) % 1_000_003  # chdir:moved-work\n"
        "    return n\n",
        encoding="utf-8",
    )
    target = [os.path.join("..", "project", CHDIR.name), os.path.join("..", "project", "moved")]
    target.append("moved_mod")
    plain = runner.python(target, cwd=start)
    plain_marker = (moved / "marker.txt").read_text(encoding="utf-8")
    (moved / "marker.txt").unlink()
    outfile = Path("out") / "profile.json"
    profiled, _ = runner.spyglass(target, outfile=outfile, cwd=start, expect_profile=False)
    assert_same_outcome(plain, profiled)
    assert profiled.stdout == plain.stdout
    assert (moved / "marker.txt").read_text(encoding="utf-8") == plain_marker
    written = start / outfile
    assert written.is_file(), (
        f"no profile at {written}; found: {sorted(map(str, runner.workdir.rglob('*.json')))}"
        f"\nstderr:\n{profiled.stderr}"
    )
    assert not (moved / outfile).exists(), "the profile went to the program's new directory"
    profile = load_profile(written)
    module_file = stdout_json(plain)["module"]  # as Python names it ("./" kept on 3.9)
    key = next(
        (k for k in (str(moved / "moved_mod.py"), module_file) if k in profile["files"]), None
    )
    assert key is not None, f"moved_mod.py is not in the profile: {sorted(profile['files'])}"
    hot = line_figures(profile, key, "# chdir:moved-work")
    loop = figures_at(profile, key, hot["lineno"] - 1)  # the `for` line: the loop's share
    assert hot["samples"] + loop["samples"] >= 5, describe(hot)
    assert cpu(hot) + cpu(loop) >= 0.5 * total_cpu(profile), f"{describe(hot)}; {describe(loop)}"


# --------------------------------------------------------------------------- stdout / stderr

STDIO_CASES = ["close_fd1", "redirect", "redirect_closed"]


@pytest.mark.parametrize("case", STDIO_CASES)
def test_program_that_closes_or_redirects_its_stdout(runner: Runner, case: str) -> None:
    """Run as users run it (report on): the exit status, the program's stdout and the file it
    redirects its output to are those of plain python, the profile is written, and the
    report still reaches spyglass's stderr (the real one, not the program's replacement)."""
    plain_file, profiled_file = runner.new_path("out", ".txt"), runner.new_path("out", ".txt")
    plain = runner.python([STDIO, case, plain_file])
    profiled, profile = runner.spyglass([STDIO, case, profiled_file], report=True)
    assert profile is not None
    expected_status = 120 if case == "close_fd1" else 0  # 120: flushing stdout at exit failed
    assert plain.returncode == expected_status, plain.stderr
    assert profiled.returncode == plain.returncode, profiled.stderr
    assert profiled.stdout == plain.stdout
    if case == "close_fd1":
        assert plain.stdout == ""  # the buffered line was lost with fd 1
        assert "Bad file descriptor" in plain.stderr and "Bad file descriptor" in profiled.stderr
    else:
        assert plain_file.read_text(encoding="utf-8").startswith("to the file")
        assert profiled_file.read_text(encoding="utf-8") == plain_file.read_text(
            encoding="utf-8"
        ), "the program's own output file differs from plain python's"
    work = line_figures(profile, STDIO, "# stdio:work")
    assert work["samples"] >= 3, describe(work)
    assert "Profile written to" in profiled.stderr, (
        f"no report on stderr (it said: {profiled.stderr!r})"
    )
    assert profile["exit_status"] == profiled.returncode, (
        f"the profile records exit status {profile['exit_status']}, the process exited with "
        f"{profiled.returncode}"
    )
