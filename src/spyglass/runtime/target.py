"""What `spyglass run` runs: a script, a module or code, checked before it starts (the
program itself runs in a fresh interpreter, exactly as plain `python` would run it)."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    import types
    from importlib.machinery import ModuleSpec


class TargetError(Exception):
    """The target cannot be run at all (missing file, syntax error, unknown module).
    `status`: what plain python exits with for it (2 for a file it cannot open, else 1)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class Target:
    def __init__(self, kind: str, value: str, args: list[str], source: bytes = b"") -> None:
        self.kind = kind  # "script", "module", "code" or "stdin" (`python -`)
        self.value = value  # the path, module name or code ("-" for stdin)
        self.args = args
        self.source = source  # stdin's: the program it held, as read

    def source_lines(self) -> list[str]:
        """The lines of a program read from stdin, decoded as Python decodes it."""
        import importlib.util

        try:
            text = importlib.util.decode_source(self.source)
        except (SyntaxError, UnicodeDecodeError, LookupError):
            text = self.source.decode("utf-8", "replace")
        return text.split("\n")

    @property
    def program(self) -> str:
        if self.kind == "module":
            return f"-m {self.value}"
        if self.kind == "code":
            return "-c"
        if self.kind == "stdin":
            return "-"
        return os.path.abspath(self.value)

    @property
    def pseudo_file(self) -> str | None:
        """The name Python gives the code of a program that is no file."""
        return {"code": "<string>", "stdin": "<stdin>"}.get(self.kind)

    def default_program_paths(self) -> list[str]:
        if self.kind == "script":
            # The script's own directory, and its real one when it is reached by a symlink.
            return [
                os.path.dirname(os.path.abspath(self.value)),
                os.path.dirname(os.path.realpath(self.value)),
            ]
        if self.kind == "module":
            # `-m json.tool`, `-m pip`: the package run is the program being profiled, even
            # where it is installed (prepare() has put the working directory on sys.path,
            # as `python -m` does, so the one found is the one that will run); `-m pytest`:
            # the suite.
            from spyglass.runtime.invocation import module_program_paths

            return [os.getcwd(), *module_program_paths(self.value, self.args)]
        return [os.getcwd()]

    def prepare(self) -> types.CodeType | None:
        """Checks the target can run, before profiling starts; compiles scripts and code."""
        if self.kind == "module":
            import importlib.util

            from spyglass.runtime.launched import ensure_site

            ensure_site()  # the module may be where only a .pth file's entry leads
            sys.path[0] = os.getcwd()  # where `python -m` looks first

            # Only the top-level package: finding "pkg.sub" would import (run) pkg here.
            try:
                spec = importlib.util.find_spec(self.value.partition(".")[0])
            except (ImportError, ValueError) as e:
                raise TargetError(f"cannot find module {self.value!r}: {e}") from None
            if spec is None:
                raise TargetError(f"no module named {self.value!r}")
            if "." not in self.value and not _package_runs(spec):
                raise TargetError(
                    f"no module named {self.value + '.__main__'!r}: {self.value!r} is a package "
                    "and cannot be directly executed",
                    1,
                )
            return None
        if self.kind == "code":
            return _compile(self.value, "<string>")
        if self.kind == "stdin":
            return _compile(self.source, "<stdin>")
        path = self.value
        if os.path.isdir(path) or path.endswith((".zip", ".pyz")):
            if not os.path.exists(os.path.join(path, "__main__.py")) and not os.path.isfile(path):
                raise TargetError(f"can't find '__main__' module in {self.value!r}")
            return None
        if os.path.exists(path) and not os.path.isfile(path):
            return None  # a pipe (`<(...)`) can be read once only: by the program
        try:
            with open(path, "rb") as f:
                source = f.read()
        except FileNotFoundError:
            raise TargetError(f"can't open file {self.value!r}: no such file", 2) from None
        except OSError as e:
            raise TargetError(f"can't open file {self.value!r}: {e.strerror}", 2) from None
        try:
            return _compile(source, os.path.abspath(self.value))
        except TargetError:
            if _python_runs_it_otherwise(path, source):
                return None
            raise


def _package_runs(spec: ModuleSpec) -> bool:
    """Whether `python -m` can run what `spec` found: a module, or a package with a
    __main__ of its own. Told from its directories, without importing it (which would run
    its __init__); True wherever that cannot be told (a package in a zip file)."""
    found = spec.submodule_search_locations
    if found is None:
        return True  # a module
    places = list(found)
    if not places or not all(os.path.isdir(p) for p in places):
        return True
    # A package that extends its path as it loads (pkgutil.extend_path) may find its
    # __main__ in a copy of itself further down sys.path.
    name = spec.name
    places += [os.path.join(entry or os.curdir, name) for entry in sys.path]
    places = [p for p in dict.fromkeys(places) if os.path.isdir(p)]
    import importlib.machinery

    suffixes = importlib.machinery.all_suffixes()
    for place in places:
        try:
            names = os.listdir(place)
        except OSError:
            return True
        if any(n == "__main__" + suffix for n in names for suffix in suffixes):
            return True
        if "__main__" in names:  # a __main__ package
            return True
    return False


def _python_runs_it_otherwise(path: str, source: bytes) -> bool:
    """Whether python runs the file as other than source: compiled (a .pyc) or a zip
    application whatever its name (a .pex, a zipapp without an extension)."""
    import importlib.util

    if path.endswith(".pyc") or source[:4] == importlib.util.MAGIC_NUMBER:
        return True
    import zipfile

    return zipfile.is_zipfile(path)


def _compile(source: str | bytes, filename: str) -> types.CodeType:
    try:
        return compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        where = f"{e.filename}, line {e.lineno}" if e.lineno else str(e.filename)
        raise TargetError(f"syntax error in {where}: {e.msg}") from None
    except ValueError as e:  # null bytes in source
        raise TargetError(f"cannot compile {filename}: {e}") from None
    except (RecursionError, MemoryError) as e:  # nesting deeper than the compiler goes
        reason = str(e) or type(e).__name__
        raise TargetError(f"cannot compile {filename}: {reason}") from None
