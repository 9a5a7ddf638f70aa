"""A GPU-bound function, a host-bound one and an idle thread, against the fake NVML
(tests/ext/fake_nvml.c, named by SPYGLASS_NVML_LIBRARY): the program tells the fake what
it does on the GPU as it enters and leaves the GPU-bound function.

usage: gpu_fake_lines.py [DEVICE [SECONDS [fork]]]
With "fork", the GPU-bound work runs in a forked child, which prints whether NVML was
initialised again in it.
"""

import ctypes
import os
import sys
import threading
import time

MB = 1 << 20
DEVICE = int(sys.argv[1]) if len(sys.argv) > 1 else 0
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 0.8
FORK = len(sys.argv) > 3 and sys.argv[3] == "fork"

fake = ctypes.CDLL(os.environ["SPYGLASS_NVML_LIBRARY"])
fake.fake_nvml_set.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_ulonglong]


def gpu_bound(seconds):
    fake.fake_nvml_set(DEVICE, 90, 2000 * MB)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
    fake.fake_nvml_set(DEVICE, 0, 500 * MB)


def host_bound(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def idler(seconds):
    time.sleep(seconds)


def main():
    idle = threading.Thread(target=idler, args=(2 * SECONDS,))
    idle.start()
    if FORK:
        pid = os.fork()
        if pid == 0:
            gpu_bound(SECONDS)
            print("child init pid is own:", fake.fake_nvml_init_pid() == os.getpid(), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
    else:
        gpu_bound(SECONDS)
    host_bound(SECONDS)
    idle.join()


main()
