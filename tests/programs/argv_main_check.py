"""Prints, as one JSON line, what a program sees of how it was started: sys.argv, __name__,
__file__, sys.path[0], and whether sys.modules["__main__"] is this very module. Run as a
script, with -m (from this directory) or with -c (its source as the argument), under plain
python and under spyglass, the output must be the same."""

import json
import sys

print(
    json.dumps(
        {
            "argv": sys.argv,
            "name": __name__,
            "file": globals().get("__file__"),
            "path0": sys.path[0],
            "main_is_this_module": vars(sys.modules["__main__"]) is globals(),
        },
        sort_keys=True,
    )
)
