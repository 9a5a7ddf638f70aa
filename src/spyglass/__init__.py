"""spyglass: a sampling profiler for Python whose core is C++.

Run a program under it with ``spyglass run app.py``, or profile part of one::

    import spyglass
    with spyglass.profile(outfile="prof.json"):
        work()
"""

from spyglass import _native
from spyglass.api import ProfilerStateError, profile, start, stop
from spyglass.schema import SCHEMA_VERSION as _SCHEMA_VERSION

__version__: str = _native.VERSION
__all__ = ["ProfilerStateError", "__version__", "profile", "start", "stop"]

if _SCHEMA_VERSION != _native.SCHEMA_VERSION:  # pragma: no cover - a packaging mistake
    raise ImportError("spyglass's Python package and native core disagree on the schema version")
