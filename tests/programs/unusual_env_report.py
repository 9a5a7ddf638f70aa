"""Reports the environment the program runs in, and what a Python child it starts sees, after
importing a module (named by argv[1]) and calling its work().

Prints a JSON object: sys.prefix, sys.executable, sys.path, the module's file, LD_PRELOAD
and PYTHONPATH as the program sees them, and the child's sys.path and LD_PRELOAD.
usage: unusual_env_report.py MODULE
"""

import importlib
import json
import os
import subprocess
import sys

CHILD = "import json, os, sys; print(json.dumps([sys.path, os.environ.get('LD_PRELOAD')]))"


def main():
    module = importlib.import_module(sys.argv[1])
    result = module.work()  # env:call
    child = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True
    )
    child_path, child_preload = json.loads(child.stdout)
    report = {
        "prefix": sys.prefix,
        "executable": sys.executable,
        "path": sys.path,
        "module": module.__file__,
        "result": result,
        "ld_preload": os.environ.get("LD_PRELOAD"),
        "pythonpath": os.environ.get("PYTHONPATH"),
        "child_path": child_path,
        "child_ld_preload": child_preload,
    }
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
