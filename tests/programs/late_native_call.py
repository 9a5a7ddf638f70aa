"""A call into an extension module imported just before it, whose work runs on threads
started by code of another object of the same package, loaded earlier: as pandas imports
pyarrow.csv as it reads a CSV, and libarrow's threads parse it while the calling thread
waits in pyarrow.csv. The program's site-packages holds the package natpool (spin_ext and
late_call, tests/ext). Prints, as JSON on stdout, the call's CPU (every thread's,
process_time)."""

import json
import time

from natpool import spin_ext


def main():
    spin_ext.spin_with_gil(0.05, cpu=True)  # the package's first object is sampled: known
    time.sleep(0.3)  # the profiler's view of the loaded objects settles
    from natpool import late_call

    t0 = time.process_time()
    late_call.spin_pool(spin_ext._pool, 4, 0.1)  # late:call
    print(json.dumps({"call_cpu_s": time.process_time() - t0}))


if __name__ == "__main__":
    main()
