"""The JSON Schema of the spyglass profile (see docs/profile-format.md).

The schema file ships inside the package, next to this module.
"""

from __future__ import annotations

# Every report imports this module for the constants below; what reads the schema file
# (importlib.resources, pathlib and through them urllib, tempfile, shutil) is imported
# only when it is read: tens of milliseconds at the end of every `spyglass run`.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# The profile schema version this spyglass writes and reads. The native module
# (spyglass._native) asserts at import time that its own version equals this one.
SCHEMA_VERSION = 3

# The oldest version readers still accept: an older document is upgraded in memory
# (spyglass.profile_model.io.upgrade), so this spyglass needs only the current schema file.
# Version 2 wrote every figure of thread and stack rows; 3 leaves out those that are 0.
MIN_SCHEMA_VERSION = 1

# The value of the top-level "format" key of every spyglass profile.
PROFILE_FORMAT = "spyglass-profile"

SCHEMA_FILENAME = f"profile-v{SCHEMA_VERSION}.schema.json"


def schema_path() -> Path:
    """Return the path of the JSON Schema file for the current schema version."""
    from pathlib import Path

    return Path(__file__).resolve().parent / SCHEMA_FILENAME


def load_schema() -> dict[str, Any]:
    """Return the JSON Schema (draft 2020-12) of the current schema version."""
    import json
    from importlib import resources

    text = resources.files(__name__).joinpath(SCHEMA_FILENAME).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


__all__ = [
    "MIN_SCHEMA_VERSION",
    "PROFILE_FORMAT",
    "SCHEMA_FILENAME",
    "SCHEMA_VERSION",
    "load_schema",
    "schema_path",
]
