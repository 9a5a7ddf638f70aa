"""Spyglass never writes into the program's own files or sockets (issue 13, item 1).

Each program here closes or overwrites the descriptors it did not open (the daemon
pattern: closerange, dup2 over every low number, a forked child that closes everything,
subprocess with close_fds) and then opens files or sockets of its own, which get the
numbers that spyglass's run journal had, while it keeps the CPU busy long enough for the
journal to be written many times. What the program wrote must be byte for byte what
plain python writes; the profile is still there.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from helpers import Runner

# One run per way a program shuffles its descriptors: seconds each.
pytestmark = pytest.mark.slow

# Enough CPU for dozens of 10 ms sampling intervals, each of which writes to the journal.
SPIN = "def spin():\n    for _ in range(25):\n        sum(range(10**6))\n"

PROGRAMS = {
    "closerange": """
        import os
        os.closerange(3, 1024)
        f = open("out.txt", "w")
        spin()
        f.write("hello\\n")
        f.close()
    """,
    "dup2_over_low_fds": """
        import os
        f = open("out.txt", "w")
        for fd in range(3, 1024):
            if fd != f.fileno():
                try:
                    os.dup2(f.fileno(), fd)
                except OSError:
                    pass
        spin()
        f.write("hello\\n")
        f.close()
    """,
    "socket_after_closerange": """
        import os, socket
        os.closerange(3, 1024)
        a, b = socket.socketpair()
        spin()
        a.sendall(b"ping")
        a.close()
        got = b""
        while True:
            chunk = b.recv(65536)
            if not chunk:
                break
            got += chunk
        with open("out.txt", "w") as f:
            f.write(repr(got))
    """,
    "fork_child_closes_all": """
        import os
        pid = os.fork()
        if pid == 0:
            os.closerange(3, 1024)
            f = open("out.txt", "w")
            spin()
            f.write("child\\n")
            f.close()
            os._exit(0)
        os.waitpid(pid, 0)
    """,
    "subprocess_close_fds": """
        import os, subprocess, sys
        os.closerange(3, 1024)
        f = open("out.txt", "w")
        code = "open('child.txt', 'w').write('child\\\\n')"
        subprocess.run([sys.executable, "-c", code], close_fds=True, check=True)
        spin()
        f.write("hello\\n")
        f.close()
    """,
}


def _program(body: str) -> str:
    return SPIN + textwrap.dedent(body)


def _written(workdir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(workdir.glob("*.txt"))}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("mode", ["--cpu-only", "--memory"])
def test_program_files_are_left_alone(runner: Runner, tmp_path: Path, name: str, mode: str) -> None:
    code = _program(PROGRAMS[name])
    plain_dir = tmp_path / "plain"
    ours_dir = tmp_path / "spyglass"
    plain_dir.mkdir()
    ours_dir.mkdir()
    plain = runner.python(["-c", code], cwd=plain_dir)
    assert plain.returncode == 0, plain.stderr
    proc, profile = runner.spyglass(
        ["-c", code], options=[mode, "--interval", "0.005"], cwd=ours_dir
    )
    assert proc.returncode == 0, proc.stderr
    assert profile is not None and profile["samples"] > 0
    assert _written(ours_dir) == _written(plain_dir)
