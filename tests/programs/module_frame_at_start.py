"""Module code caught before its first line: a profile hook (sys.setprofile) that waits and
then computes in the call event of module code the program runs with exec. From 3.11 the
module frame then stands on its RESUME instruction, which CPython puts on line 0."""

import sys
import time

MODULE = "x = 1\ny = 2\n"
code = compile(MODULE, __file__, "exec")


def hook(frame, event, arg):
    if event == "call" and frame.f_code is code:
        sys.setprofile(None)
        time.sleep(0.2)  # hook:wait
        end = time.thread_time() + 0.1
        while time.thread_time() < end:
            pass


sys.setprofile(hook)
exec(code)  # run:module
sys.setprofile(None)
