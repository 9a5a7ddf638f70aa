"""Runs cells through an in-process IPython shell, as a terminal IPython or a notebook
would, and prints as JSON what each cell showed (the forms of every display: text,
HTML), the value it returned, and the error it raised.

usage: ipython_magic_cells.py WORKDIR    (the magic's -o files are written there)"""

import json
import os
import sys

from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

os.chdir(sys.argv[1])
shell = InteractiveShell.instance()

CELLS = {
    "load": "%load_ext spyglass",
    # A function defined in a cell of its own: its lines are that cell's.
    "define": """\
def spin(n):
    total = 0
    for i in range(n):
        total += i * i  # nb:spin
    return total
""",
    "cell": """\
%%spyglass -o cell.json --html cell.html
small = [0] * 10
kept = bytearray(64 << 20)  # nb:alloc
spun = spin(3_000_000)
spun
""",
    "line": "before = 1\n%spyglass -o line.json --cpu-only spin(2_000_000)",
    "raises": "%%spyglass -o raises.json\nspin(1_000_000)\n1 / 0  # nb:raise",
    "bad_option": "%spyglass --no-such-option spin(10)",
    "no_statement": "%spyglass -o x.json",
    "after": "print(spyglass_alive := 'yes')",
}

results = {}
for key, code in CELLS.items():
    with capture_output() as captured:
        done = shell.run_cell(code, store_history=True)
    error = done.error_before_exec or done.error_in_exec
    results[key] = {
        "number": shell.execution_count - 1,
        "displays": [out.data for out in captured.outputs],
        "stdout": captured.stdout,
        "stderr": captured.stderr,
        "result": repr(done.result),
        "error": type(error).__name__ if error is not None else None,
    }
print(json.dumps(results))
