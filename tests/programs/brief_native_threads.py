"""Threads of a C extension, each running no Python and living a little more than one
sampling interval of CPU, started one after the other while the caller waits for each:
the scan that finds such a thread comes when some of its work is done. Prints the CPU the
threads measured of themselves."""

import json

import spin_ext

COUNT = 30
SECONDS = 0.02

brief = spin_ext.spin_in_threads(COUNT, SECONDS)  # native:brief
print(json.dumps({"brief_cpu_s": brief}))
