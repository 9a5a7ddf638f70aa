"""The supervisor's side of the `spyglass` launcher (src/native/launcher/main.cpp), which
started the program before this interpreter had even started: the program waits in its
bootstrap for the run's configuration, which only this side can make.

The supervisor adopts the program when it is exactly the command it would have run itself
(the launcher reads the command line without Python's parser, so this is checked, not
assumed), and sends it the path of the run's configuration. Otherwise (an error in the
command line, a line the launcher read otherwise) the program is ended before any of its
code has run, and the supervisor goes on as if there were no launcher."""

from __future__ import annotations

import os

LAUNCHED_ENV = "SPYGLASS_LAUNCHED"  # "PID:FD:TARGET_INDEX:BLOCKED,...:BOOTSTRAP_DIR"
# Set by the launcher when it started this interpreter without site (-S): the directory
# spyglass is installed in, the one of site's that the supervisor needs at once.
SITE_ENV = "SPYGLASS_SUPERVISOR_SITE"
# Set (to anything) for a line on stderr saying whether the launched program was adopted:
# the tests' way to tell that the launcher's path was taken.
DEBUG_ENV = "SPYGLASS_DEBUG_LAUNCHER"


class LaunchedProgram:
    def __init__(self, pid: int, fd: int, target_index: int, bootstrap: str) -> None:
        self.pid = pid
        self.fd = fd
        self.target_index = target_index
        self.bootstrap = bootstrap

    def command(self) -> list[str]:
        """The program's argv, as the launcher exec'd it: its interpreter (ours) and our
        own command line from the target on."""
        import sys

        from spyglass.runtime.invocation import command_line

        interpreter = command_line()[:1]
        return interpreter + sys.argv[self.target_index :] if interpreter else []

    def adopt(self, config_path: str) -> int:
        """Sends the program the run's configuration; returns its pid. A program that has
        died meanwhile (a Ctrl-C, the OOM killer) is left to the supervisor's wait, which
        reaps it and keeps its status."""
        data = os.fsencode(config_path)
        try:
            while data:
                data = data[os.write(self.fd, data) :]
        except OSError:
            pass  # EPIPE: it has ended
        finally:
            os.close(self.fd)
        return self.pid

    def abandon(self) -> None:
        """Ends the program, which has not run any of its code yet, and reaps it."""
        import signal

        os.close(self.fd)
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass  # gone already


# The program the launcher started, until adopted or abandoned; and the signals (of those
# the launcher blocked for the supervisor) that were blocked when spyglass was started.
_pending: list[LaunchedProgram] = []
_blocked_before: list[set[int]] = []
# Whether this interpreter's -S is the launcher's, not the user's.
_site_left_out: list[bool] = [False]


def site_left_out() -> bool:
    """Whether the launcher started this interpreter without site: then -S on its command
    line is not the user's, and the program does not inherit it."""
    return _site_left_out[0]


def ensure_site() -> None:
    """Does what site would have done at start-up (.pth files, the user's site-packages,
    the platform's other site directory), where the launcher left it out: before looking
    for a module the program runs with `-m`, or importing a dependency."""
    import sys

    if _site_left_out[0] and "site" not in sys.modules:
        import site

        site.main()


def take() -> None:
    """Reads (and removes, so that no process this one starts sees it) what the launcher
    left in the environment. Called first thing by the command line."""
    _site_left_out[0] = os.environ.pop(SITE_ENV, None) is not None
    value = os.environ.pop(LAUNCHED_ENV, None)
    if value is None:
        return
    try:
        pid, fd, index, blocked, bootstrap = value.split(":", 4)
        program = LaunchedProgram(int(pid), int(fd), int(index), bootstrap)
        _blocked_before[:] = [{int(s) for s in blocked.split(",") if s}]
    except ValueError:
        return  # not the launcher's: nothing to adopt
    _pending.append(program)


def claim(command: list[str], bootstrap: str) -> LaunchedProgram | None:
    """The launched program, if it runs `command` under `bootstrap` (as this spyglass would
    start it); else None, after ending it."""
    if not _pending:
        return None
    program = _pending.pop()
    same_bootstrap = program.bootstrap == os.path.realpath(bootstrap)
    adopted = same_bootstrap and _same_command(program.command(), command)
    if os.environ.get(DEBUG_ENV):
        import sys

        what = "adopted" if adopted else f"abandoned (it runs {program.command()!r})"
        print(f"spyglass: debug: the launched program is {what}", file=sys.stderr)
    if adopted:
        return program
    program.abandon()
    return None


def _same_command(launched: list[str], ours: list[str]) -> bool:
    """The same arguments, run by the same interpreter (sys.executable may spell the path
    the launcher found otherwise: `//`, `..`)."""
    if launched[1:] != ours[1:] or not launched or not ours:
        return False
    return launched[0] == ours[0] or os.path.realpath(launched[0]) == os.path.realpath(ours[0])


def abandon_pending() -> None:
    """Ends the launched program if nothing adopted it (the command line failed first)."""
    while _pending:
        _pending.pop().abandon()


def mask_before(mask: set[int], watched: set[int]) -> set[int]:
    """The signal mask spyglass was started with, from `mask`, the current one: the
    launcher blocked `watched` (for none to be lost while this interpreter started),
    except those already blocked."""
    if not _blocked_before:
        return mask
    return (set(mask) - set(watched)) | (_blocked_before[0] & set(watched))
