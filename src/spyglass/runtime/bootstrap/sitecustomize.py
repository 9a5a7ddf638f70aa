"""Put first on PYTHONPATH by `spyglass run`, so that each Python process the profiled
program starts (multiprocessing's spawn and forkserver workers, subprocesses running
python) profiles itself too. Any other sitecustomize still runs.

Every Python the program runs imports this file, whatever its version, Python 2
included: it must parse and run quietly in all of them (no annotations, no f-strings)."""
# ruff: noqa: UP031  %-formatting parses everywhere

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # noqa: F401  used in type comments, which parse everywhere


def _spyglass_bootstrap():
    # type: () -> None
    import os

    # A Ctrl-C may come at any moment from here on (the supervisor passes it on to the
    # program it launched; the terminal sends it to every process the program started).
    # Raised in an import (our extension's, whose failure pybind11 turns into an
    # ImportError) it would be taken for that import's error and lost: the process ran on,
    # unprofiled. So it is held, and acted on once the bootstrap is done.
    hold = _hold_sigint()
    # The program started with SIGINT blocked until now, when it is held (a Ctrl-C passed
    # on earlier, in site's own imports, was a fatal error); one already sent comes now.
    if os.environ.pop("SPYGLASS_SIGINT_BLOCKED", None) is not None:
        _unblock_sigint()
    launched = "SPYGLASS_CONFIG_FD" in os.environ
    try:
        _bootstrap()
    finally:
        if hold is not None and launched:
            _release_sigint_at_main(hold)
        elif hold is not None:
            _release_sigint(hold)


def _bootstrap():
    # type: () -> None
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    # The process sees the sys.path it would have had without us: this directory goes,
    # however it is spelled (a symlinked lib64, a path the launcher resolved).
    mine = _identity(here)
    sys.path[:] = [
        p
        for p in sys.path
        if os.path.abspath(p or ".") != here and (mine is None or _identity(p or ".") != mine)
    ]
    config = os.environ.get("SPYGLASS_CHILD_CONFIG")  # run_environment.CHILD_CONFIG_ENV
    fd = os.environ.pop("SPYGLASS_CONFIG_FD", None)
    if fd is not None:
        # The program, started by the launcher before the run was set up: nothing else may
        # run before the supervisor has adopted it (the next sitecustomize would run twice
        # if it starts the program itself instead).
        config = _config_from_supervisor(int(fd), os.path.dirname(os.path.dirname(here)))
        os.environ["SPYGLASS_CHILD_CONFIG"] = config  # for the processes it starts
    this = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # type: ignore[import-not-found]  # noqa: F401  the next one, if any
    except ImportError:
        if this is not None:
            sys.modules["sitecustomize"] = this
    if not config or not os.path.exists(config):
        return
    try:
        import marshal  # built in: run_environment.prepare_children says why

        with open(config, "rb") as f:
            settings = marshal.load(f)
        if list(sys.version_info[:2]) != settings["python"]:
            _other_interpreter(settings)
            return
        if settings["package_parent"] not in sys.path:
            sys.path.append(settings["package_parent"])
            try:
                import spyglass.runtime.children as children
            finally:
                sys.path.remove(settings["package_parent"])
        else:
            import spyglass.runtime.children as children
        children.activate_child(settings)
    except Exception as e:  # never break the program over its profile
        sys.stderr.write("spyglass: warning: process %d is not profiled: %s\n" % (os.getpid(), e))


def _hold_sigint():
    # type: () -> Any
    """Holds SIGINT: a Ctrl-C during the bootstrap (the imports, the launched program's
    wait for the supervisor, the profiler's start) is only noted. Returns the handler, or
    None where SIGINT was not Python's default (ignored: started in the background) or
    the interpreter has no `_signal` (Python 2)."""
    try:
        import _signal  # type: ignore[import-not-found]  # signal imports enum: ms of start-up
    except ImportError:
        return None

    default = _signal.default_int_handler
    if _signal.getsignal(_signal.SIGINT) is not default:
        return None

    def hold(signum, frame):
        # type: (int, Any) -> None
        hold.held = True  # type: ignore[attr-defined]
        while frame is not None:
            if frame.f_globals.get("__name__") == "__main__":
                # The program runs, and something replaced the profile function that would
                # have put SIGINT's handler back: its own, kept.
                _signal.signal(_signal.SIGINT, default)
                raise KeyboardInterrupt
            frame = frame.f_back

    hold.held = False  # type: ignore[attr-defined]
    _signal.signal(_signal.SIGINT, hold)
    return hold


def _unblock_sigint():
    # type: () -> None
    try:
        import _signal

        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, [_signal.SIGINT])
    except Exception:  # no pthread_sigmask here: SIGINT stays as it was
        pass


def _release_sigint(hold):
    # type: (Any) -> None
    """Python's own SIGINT handler is back; a Ctrl-C held meanwhile ends the process now,
    of SIGINT, as one in its start-up would have."""
    import _signal

    if _signal.getsignal(_signal.SIGINT) is hold:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    if hold.held:
        _die_of_sigint()


def _release_sigint_at_main(hold):
    # type: (Any) -> None
    """The launched program: a Ctrl-C held so far ends it now, of SIGINT, before any of
    its code has run. Else SIGINT stays held until the program's first line: in CPython's
    own start-up after site, a KeyboardInterrupt is printed and dropped (its check of
    whether argv[0] is an import path entry goes on after it), and the program ran to its
    end, exit status 0. At that line the handler and the profile function that finds it
    go, so that the program sees SIGINT's handler as Python leaves it (asyncio looks)."""
    import _signal
    import sys

    if hold.held:
        _die_of_sigint()
    previous = sys.getprofile()  # a sitecustomize of the program's may have set one
    if previous is not None and not callable(previous):
        # A profiler in C (cProfile started by a sitecustomize, before 3.12): it cannot be
        # called on, and must not be replaced. SIGINT is Python's again from here.
        if _signal.getsignal(_signal.SIGINT) is hold:
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        return

    def program_started(frame, event, arg):
        # type: (Any, Any, Any) -> None
        if previous is not None:
            previous(frame, event, arg)
        if event != "call" or frame.f_globals.get("__name__") != "__main__":
            return
        sys.setprofile(previous)
        native = sys.modules.get("spyglass._native")
        try:
            if native is not None:
                native.program_starts()  # its first sample in the program's code
        except Exception:
            pass  # never break the program over its profile
        if _signal.getsignal(_signal.SIGINT) is hold:
            _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        if hold.held:
            _die_of_sigint()  # before the program's first line, as during the bootstrap

    sys.setprofile(program_started)


def _identity(path):
    # type: (str) -> tuple[int, int] | None
    """The file `path` names (device, inode); None where there is none."""
    import os

    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _config_from_supervisor(fd, package_dir):
    # type: (int, str) -> str
    """The path of the run's configuration, which the supervisor writes to `fd` once it
    has checked the command line (runtime/launched.py). Meanwhile, what profiling will
    need is imported. If the supervisor closes it unwritten, it runs the command another
    way (or not at all), and this process must end before any of the program's code has
    run: it is usually killed first."""
    import os
    import sys

    parent = os.path.dirname(package_dir)
    if os.path.basename(package_dir) == "spyglass":
        added = parent not in sys.path
        if added:
            sys.path.append(parent)
        try:
            import spyglass._native
            import spyglass.runtime.children
            import spyglass.runtime.invocation
            import spyglass.runtime.process_profiler  # noqa: F401
        except Exception:
            pass  # said when profiling starts
        finally:
            if added:
                sys.path.remove(parent)
    data = b""
    try:
        while True:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
        os.close(fd)
    except KeyboardInterrupt:
        raise  # _die_of_sigint
    except BaseException as e:  # the program must not run unadopted
        sys.stderr.write("spyglass: error: the program could not be started: %s\n" % (e,))
        os._exit(1)
    if not data:
        os._exit(0)
    return os.fsdecode(data)


def _other_interpreter(settings):
    # type: (dict[str, Any]) -> None
    """Another Python version than the run's: our native core is built for the run's only.
    This interpreter's own spyglass, if it has the same one, profiles it; else the run is
    told that this process went unprofiled, and why."""
    import json
    import os
    import sys

    version = "%d.%d" % sys.version_info[:2]
    try:
        import spyglass
        import spyglass._native  # the package itself imports without its build
    except ImportError:
        reason = "spyglass is not installed for Python %s" % version
    except Exception as e:  # the run's spyglass, found on a shared path, in an older Python
        reason = "Python %s cannot import spyglass: %s" % (version, e)
    else:
        theirs = getattr(spyglass, "__version__", "?")
        if theirs == settings.get("spyglass_version"):
            import spyglass.runtime.children as children

            children.activate_child(settings)
            return
        reason = "Python %s has spyglass %s, the run %s" % (
            version,
            theirs,
            settings.get("spyglass_version"),
        )
    argv = list(getattr(sys, "argv", None) or [])  # Python 2 sets it after site runs
    note = {
        "pid": os.getpid(),
        "program": argv[0] if argv else sys.executable,
        "argv": argv or [sys.executable],
        "python_version": "%d.%d.%d" % sys.version_info[:3],
        "executable": sys.executable,
        "not_profiled": reason,
    }
    path = os.path.join(settings["fragments_dir"], "unprofiled-%d.json" % os.getpid())
    with open(path, "w") as f:
        json.dump(note, f)  # ASCII: the same in every version


def _die_of_sigint():
    # type: () -> None
    """Ctrl-C before the program's first line: it dies of it, as a program interrupted at
    its start does (not of the fatal error an exception out of site would make)."""
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    os._exit(130)


try:
    _spyglass_bootstrap()
except KeyboardInterrupt:
    _die_of_sigint()
del _spyglass_bootstrap
