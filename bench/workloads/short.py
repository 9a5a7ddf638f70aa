"""A program that only sleeps for 0.2 s: start-up cost for profilers that need the
program to live a little (py-spy cannot attach to one that exits at once)."""

import time

time.sleep(0.2)
