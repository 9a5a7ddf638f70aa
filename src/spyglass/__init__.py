"""spyglass: a sampling profiler for Python whose core is C++.

Run a program under it with ``spyglass run app.py``, or profile part of one::

    import spyglass
    with spyglass.profile(outfile="prof.json"):
        work()

(PYTEST_DONT_REWRITE: the package is imported before pytest starts when pytest runs under
``spyglass run``, so pytest must not try to rewrite it as the home of its plugin.)
"""

from __future__ import annotations

from spyglass._constants import VERSION

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up

# Not read from the extension, which this import does not load: `spyglass run` starts the
# program first (_constants.py).
__version__: str = VERSION
__all__ = ["ProfilerStateError", "__version__", "profile", "start", "stop"]

if TYPE_CHECKING:
    from typing import Any

    from spyglass.api import ProfilerStateError, profile, start, stop


def __getattr__(name: str) -> Any:
    # The API is imported on first use: `spyglass run` does not need it, and every
    # millisecond of import is start-up overhead added to the profiled program.
    if name in ("ProfilerStateError", "profile", "start", "stop"):
        from spyglass import api

        return getattr(api, name)
    if name == "load_ipython_extension":  # `%load_ext spyglass`
        from spyglass.integrations import ipython_magic

        return ipython_magic.load_ipython_extension
    raise AttributeError(f"module 'spyglass' has no attribute {name!r}")


def __dir__() -> list[str]:
    # The public API, imported lazily, for dir() and tab completion; not the submodules.
    return sorted(set(__all__) | {name for name in globals() if name.startswith("__")})
