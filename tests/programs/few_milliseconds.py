"""A program of a few milliseconds of CPU, shorter than the sampling interval: one line
does all its work. Prints on stderr the CPU time that line took, measured by itself."""

import sys
import time

start = time.thread_time()
total = sum(i * i for i in range(150_000))  # brief:hot
sys.stderr.write("brief cpu %.6f\n" % (time.thread_time() - start))
