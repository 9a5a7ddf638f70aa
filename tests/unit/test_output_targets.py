"""Where spyglass writes: never a device node, FIFO or /dev/stdout replaced by a regular
file, never a file reached through a symlink another user planted, never a temporary name
someone can guess (issue 13, items 2 and 3).

The commands run in-process through their main(); `spyglass run` writes through
runtime.output, exercised directly (the run itself is tested in the integration tier).
"""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from spyglass.cli import diff as diff_cli
from spyglass.cli import merge as merge_cli
from spyglass.cli import view as view_cli
from spyglass.outfile import check_writable, write_output
from spyglass.runtime import output

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PROFILE = str(FIXTURES / "cpu_simple.json")
ROOT = os.geteuid() == 0
OTHER_USER = "spyglass-other"

needs_root = pytest.mark.skipif(not ROOT, reason="device nodes and other users need root")


@pytest.fixture(scope="module")
def other_uid() -> Iterator[int]:
    """A second local user, made for the test (and removed after)."""
    if not ROOT:
        pytest.skip("making a user needs root")
    made = False
    try:
        uid = pwd.getpwnam(OTHER_USER).pw_uid
    except KeyError:
        done = subprocess.run(
            ["useradd", "-M", "-r", "-s", "/usr/sbin/nologin", OTHER_USER], capture_output=True
        )
        if done.returncode != 0:
            pytest.skip(f"useradd failed: {done.stderr.decode(errors='replace').strip()}")
        uid = pwd.getpwnam(OTHER_USER).pw_uid
        made = True
    yield uid
    if made:
        subprocess.run(["userdel", OTHER_USER], capture_output=True)


@pytest.fixture
def shared_dir(tmp_path: Path) -> Path:
    """A directory like /tmp: sticky and world-writable."""
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(0o1777)
    return d


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file only its owner may read or write, which nothing may change."""
    v = tmp_path / "victim"
    v.write_text("precious\n")
    v.chmod(0o600)
    return v


def plant(link: Path, target: Path, uid: int) -> None:
    """A symlink owned by `uid`, as that user would have made it."""
    os.symlink(target, link)
    os.lchown(link, uid, uid)


def char_device(path: Path, minor: int) -> None:
    """A private copy of /dev/null (minor 3) or /dev/full (minor 7)."""
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# --------------------------------------------------------------------------- devices


@needs_root
@pytest.mark.parametrize(
    "command",
    [
        ["view", "--format", "json", "-o", "{out}", PROFILE],
        ["view", "--format", "collapsed", "-o", "{out}", PROFILE],
        ["view", "--html", "-o", "{out}", PROFILE],
        ["merge", PROFILE, PROFILE, "-o", "{out}"],
        ["diff", "--format", "json", "-o", "{out}", PROFILE, PROFILE],
    ],
)
def test_a_device_node_is_written_not_replaced(tmp_path: Path, command: list[str]) -> None:
    null = tmp_path / "null"
    char_device(null, 3)
    mains = {"view": view_cli.main, "merge": merge_cli.main, "diff": diff_cli.main}
    argv = [a.replace("{out}", str(null)) for a in command[1:]]
    assert mains[command[0]](argv) == 0
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert os.lstat(null).st_rdev == os.makedev(1, 3)
    assert leftovers(tmp_path) == []


@needs_root
def test_a_full_device_is_one_line_of_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = tmp_path / "full"
    char_device(full, 7)
    assert view_cli.main(["--format", "json", "-o", str(full), PROFILE]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spyglass: error: cannot write") and err.count("\n") == 1
    assert stat.S_ISCHR(os.lstat(full).st_mode)
    assert leftovers(tmp_path) == []


@needs_root
def test_run_output_onto_a_device_keeps_the_device(tmp_path: Path) -> None:
    null = tmp_path / "null"
    char_device(null, 3)
    assert check_writable(str(null)) is None
    output.write_text_atomically(str(null), '{"x": 1}\n')
    assert stat.S_ISCHR(os.lstat(null).st_mode)


@needs_root
def test_spyglass_run_onto_a_device_node(tmp_path: Path) -> None:
    null = tmp_path / "null"
    char_device(null, 3)
    html = tmp_path / "page.html"
    char_device(html, 3)
    argv = ["run", "--no-report", "-o", str(null), "--html", str(html), "-c", "pass"]
    done = subprocess.run(
        [sys.executable, "-m", "spyglass", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    for node in (null, html):
        assert stat.S_ISCHR(os.lstat(node).st_mode) and os.lstat(node).st_rdev == os.makedev(1, 3)
    assert leftovers(tmp_path) == []


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    try:
        assert view_cli.main(["--format", "json", "-o", str(fifo), PROFILE]) == 0
    finally:
        reader.join(timeout=30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(got[0])["format"] == "spyglass-profile"


# --------------------------------------------------------------------------- stdout


@pytest.mark.parametrize("name", ["/dev/stdout", "/proc/self/fd/1", "/dev/fd/1"])
def test_dev_stdout_is_the_descriptor_as_the_shell_set_it(tmp_path: Path, name: str) -> None:
    out = tmp_path / "log.txt"
    out.write_text("kept\n")
    code = (
        "import sys; from spyglass.cli.main import main; "
        f"sys.exit(main(['view', '--format', 'json', '-o', {name!r}, {PROFILE!r}]))"
    )
    with open(out, "a") as fh:  # `>> log.txt`: what was there stays
        done = subprocess.run([sys.executable, "-c", code], stdout=fh, stderr=subprocess.PIPE)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.startswith("kept\n")
    assert json.loads(text[len("kept\n") :])["format"] == "spyglass-profile"


@pytest.mark.parametrize(
    "argv",
    [
        ["view", "--format", "json", "-o", "-", PROFILE],
        ["merge", PROFILE, "-o", "-"],
        ["diff", "--format", "json", "-o", "-", PROFILE, PROFILE],
    ],
)
def test_dash_is_standard_output(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    mains = {"view": view_cli.main, "merge": merge_cli.main, "diff": diff_cli.main}
    assert mains[argv[0]](argv[1:]) == 0
    assert json.loads(capsys.readouterr().out)["format"].startswith("spyglass-")
    assert list(tmp_path.iterdir()) == []  # no file named "-"


def test_run_refuses_an_empty_name_before_the_program_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').close()"
    done = subprocess.run(
        [sys.executable, "-m", "spyglass", "run", "-o", "", "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "give a file name" in done.stderr
    assert not marker.exists()


def test_run_writes_the_profile_to_stdout_with_dash(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spyglass", "run", "--no-report", "-o", "-", "-c", "pass"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "spyglass-profile"
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- regular files


def test_a_regular_file_is_replaced_whole_with_the_usual_mode(tmp_path: Path) -> None:
    target = tmp_path / "p.json"
    target.write_text("old")
    mask = os.umask(0o022)
    try:
        write_output(target, "new")
    finally:
        os.umask(mask)
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert leftovers(tmp_path) == []


def test_a_symlink_of_ones_own_is_followed(tmp_path: Path) -> None:
    real = tmp_path / "data" / "p.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "p.json"
    link.symlink_to(real)
    write_output(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_a_renderer_that_fails_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    from spyglass.reporters import collapsed

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(collapsed.CollapsedReporter, "render", broken)
    assert view_cli.main(["--format", "collapsed", "-o", str(target), PROFILE]) == 2
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


# --------------------------------------------------------------------------- other users


@needs_root
def test_a_planted_temporary_name_is_never_followed(
    shared_dir: Path, victim: Path, other_uid: int
) -> None:
    target = shared_dir / "prof.json"
    # The names spyglass used to pick were predictable: plant every one of them.
    for name in (f".prof.json.{os.getpid()}.tmp", ".prof.json.tmp", "prof.json.tmp"):
        plant(shared_dir / name, victim, other_uid)
    output.write_text_atomically(str(target), '{"x": 1}\n')
    assert victim.read_text() == "precious\n"
    assert target.read_text() == '{"x": 1}\n' and not target.is_symlink()


@needs_root
@pytest.mark.parametrize("how", ["run", "view-html", "view-json", "merge", "diff-html"])
def test_a_link_planted_at_the_final_name_is_replaced_not_followed(
    shared_dir: Path, victim: Path, other_uid: int, how: str
) -> None:
    target = shared_dir / ("out.html" if how.endswith("html") else "out.json")
    plant(target, victim, other_uid)
    if how == "run":
        output.write_text_atomically(str(target), '{"x": 1}\n')
    elif how == "view-html":
        copy = shared_dir / "out.json"
        copy.write_bytes(Path(PROFILE).read_bytes())
        assert view_cli.main(["--html", str(copy)]) == 0  # the default name: out.html
    elif how == "view-json":
        assert view_cli.main(["--format", "json", "-o", str(target), PROFILE]) == 0
    elif how == "merge":
        assert merge_cli.main([PROFILE, "-o", str(target)]) == 0
    else:
        assert diff_cli.main(["--format", "html", "-o", str(target), PROFILE, PROFILE]) == 0
    assert victim.read_text() == "precious\n"
    assert not target.is_symlink() and target.stat().st_uid == os.geteuid()
    assert leftovers(shared_dir) == []


@needs_root
def test_a_link_by_another_user_outside_a_shared_directory_is_followed(
    tmp_path: Path, other_uid: int
) -> None:
    # Only the sticky world-writable case is an attack: elsewhere the link is the
    # directory owner's doing, and following it is what they asked for.
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    plant(link, real, other_uid)
    write_output(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


@needs_root
def test_a_user_is_told_before_the_run_about_a_link_they_cannot_replace(
    shared_dir: Path, victim: Path, other_uid: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = shared_dir / "prof.json"
    plant(target, victim, other_uid)
    monkeypatch.setattr(os, "geteuid", lambda: other_uid + 1)  # neither root nor its owner
    problem = check_writable(str(target))
    assert problem is not None and "symlink another user made" in problem


def test_a_directory_that_takes_no_new_file_is_refused_up_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """access() calls /proc writable for root, but no file can be made there: found before
    the program runs, not once the run is over."""
    import spyglass.outfile as outfile

    real_open = os.open

    def refusing(path: str, flags: int, mode: int = 0o777) -> int:
        if os.path.basename(path).startswith(".spyglass-probe-"):
            raise FileNotFoundError(2, "No such file or directory", path)
        return real_open(path, flags, mode)

    monkeypatch.setattr(outfile.os, "open", refusing)
    target = tmp_path / "p.json"
    assert check_writable(str(target)) == (
        f"cannot write the profile to {str(target)!r}: no such file or directory"
    )
    monkeypatch.undo()
    assert check_writable(str(target)) is None
    assert list(tmp_path.iterdir()) == []  # the probe leaves nothing behind
