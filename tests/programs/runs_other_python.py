"""Runs another Python version (given as argv[1]) on a child program doing CPU work
(argv[2]); prints what the child printed and its status."""

import subprocess
import sys

done = subprocess.run([sys.argv[1], sys.argv[2]], capture_output=True, text=True)
print(done.stdout, end="")
print("child status", done.returncode)
