"""Runs the program being profiled the way plain `python` would: same sys.argv, __main__,
sys.path[0] and __file__, and the same exit status."""

from __future__ import annotations

import os
import sys
import types


class TargetError(Exception):
    """The target cannot be run at all (missing file, syntax error, unknown module)."""


class Target:
    def __init__(self, kind: str, value: str, args: list[str]) -> None:
        self.kind = kind  # "script", "module" or "code"
        self.value = value  # the path, module name or code
        self.args = args

    @property
    def program(self) -> str:
        if self.kind == "module":
            return f"-m {self.value}"
        if self.kind == "code":
            return "-c"
        return os.path.abspath(self.value)

    def default_program_paths(self) -> list[str]:
        if self.kind == "script":
            # The script's own directory, and its real one when it is reached by a symlink.
            return [
                os.path.dirname(os.path.abspath(self.value)),
                os.path.dirname(os.path.realpath(self.value)),
            ]
        return [os.getcwd()]

    def prepare(self) -> types.CodeType | None:
        """Checks the target can run, before profiling starts; compiles scripts and code."""
        if self.kind == "module":
            import importlib.util

            sys.path[0] = os.getcwd()  # where `python -m` looks first

            try:
                spec = importlib.util.find_spec(self.value)
            except (ImportError, ValueError) as e:
                raise TargetError(f"cannot find module {self.value!r}: {e}") from None
            if spec is None:
                raise TargetError(f"no module named {self.value!r}")
            return None
        if self.kind == "code":
            return _compile(self.value, "<string>")
        path = self.value
        if os.path.isdir(path) or path.endswith((".zip", ".pyz")):
            if not os.path.exists(os.path.join(path, "__main__.py")) and not os.path.isfile(path):
                raise TargetError(f"can't find '__main__' module in {self.value!r}")
            return None
        try:
            with open(path, "rb") as f:
                source = f.read()
        except FileNotFoundError:
            raise TargetError(f"can't open file {self.value!r}: no such file") from None
        except OSError as e:
            raise TargetError(f"can't open file {self.value!r}: {e.strerror}") from None
        return _compile(source, os.path.abspath(self.value))

    def run(self, code: types.CodeType | None) -> None:
        """Runs the target in this interpreter; exceptions and SystemExit propagate."""
        if self.kind == "module":
            sys.argv = [self.value, *self.args]  # runpy puts the module's path in argv[0]
            sys.path[0] = os.getcwd()
            import runpy

            # What `python -m` itself calls: argv[0] becomes the module's path and stays so.
            run_as_main = getattr(runpy, "_run_module_as_main", None)
            if run_as_main is not None:
                run_as_main(self.value, True)
            else:  # pragma: no cover - every supported version has it
                runpy.run_module(self.value, run_name="__main__", alter_sys=True)
            return
        if self.kind == "code":
            sys.argv = ["-c", *self.args]
            sys.path[0] = ""
            import linecache

            linecache.cache["<string>"] = (
                len(self.value),
                None,
                self.value.splitlines(True),
                "<string>",
            )
            _exec_as_main(code, "<string>", file=None)
            return
        sys.argv = [self.value, *self.args]
        if code is None:  # a directory or zip with __main__.py
            sys.path[0] = self.value
            import runpy

            runpy.run_path(self.value, run_name="__main__")
            return
        # As plain python: __file__ keeps a symlink's own path, sys.path[0] is the real directory.
        sys.path[0] = os.path.dirname(os.path.realpath(self.value))
        _exec_as_main(code, os.path.abspath(self.value), file=os.path.abspath(self.value))


def _compile(source: str | bytes, filename: str) -> types.CodeType:
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        where = f"{e.filename}, line {e.lineno}" if e.lineno else str(e.filename)
        raise TargetError(f"syntax error in {where}: {e.msg}") from None
    except ValueError as e:  # null bytes in source
        raise TargetError(f"cannot compile {filename}: {e}") from None


def _exec_as_main(code: types.CodeType | None, name: str, file: str | None) -> None:
    assert code is not None
    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": __builtins__, "__spec__": None, "__loader__": None})
    if file is not None:
        main.__file__ = file
        main.__cached__ = None  # type: ignore[attr-defined]
    # The launcher's own __main__ stays reachable so that it is not torn down under us.
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules.setdefault("_spyglass_launcher_main", saved)
