"""Starts a Python interpreter (sys.executable) and a non-Python program (/bin/echo); the
Python child does CPU work in a file of the program's directory."""

import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
child = os.path.join(here, "subprocess_child.py")
out = subprocess.run([sys.executable, child], capture_output=True, text=True, check=True)
print(out.stdout.strip())
print(subprocess.run(["echo", "plain echo"], capture_output=True, text=True).stdout.strip())
