"""Moves to another directory, puts it on sys.path by a relative name, and imports a module
from there whose function does the work. Writes a marker file in the new directory.

usage: unusual_chdir_import.py NEW_DIR MODULE   (NEW_DIR relative to the starting directory)
"""

import importlib
import json
import os
import sys


def main():
    new_dir, module_name = sys.argv[1], sys.argv[2]
    started_in = os.getcwd()
    os.chdir(new_dir)
    sys.path.insert(0, ".")
    module = importlib.import_module(module_name)
    result = module.moved_work()  # chdir:call
    with open("marker.txt", "w") as f:
        f.write(f"{result}\n")
    print(json.dumps({"started_in": started_in, "cwd": os.getcwd(), "module": module.__file__}))


if __name__ == "__main__":
    main()
