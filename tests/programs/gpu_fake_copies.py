"""Copies known byte counts through the fake CUDA runtime and driver (tests/ext/fake_cuda.c),
every copy path from a line of its own, and prints what each line copied, by direction.

argv[1]: the copier library (tests/ext/cuda_copier.c), loaded while spyglass runs (`run`),
or before spyglass.start() (`api`: then the profile is printed too); `fork`: a forked child
copies 13 MiB from the device, on a line of its own, after the parent loaded the library."""

import ctypes
import json
import os
import sys

MIB = 1 << 20
H2D, D2H, D2D, DEFAULT = 1, 2, 3, 4
truth: dict[int, dict[str, int]] = {}


def check(rc, direction, n, small=False):
    """Notes that the caller's line copied `n` bytes in `direction` (`small`: in copies
    smaller than the copy window)."""
    assert rc == 0, rc
    line = truth.setdefault(sys._getframe(1).f_lineno, {"htod": 0, "dtoh": 0, "dtod": 0})
    line[direction] += n
    line["small"] = small


def copies(lib):
    check(lib.rt_copy(H2D, 3 * MIB), "htod", 3 * MIB)
    check(lib.rt_copy(D2H, 5 * MIB), "dtoh", 5 * MIB)
    check(lib.rt_copy(D2D, 7 * MIB), "dtod", 7 * MIB)
    check(lib.rt_copy(DEFAULT, 4 * MIB), "htod", 4 * MIB)
    check(lib.rt_default_dtoh(6 * MIB), "dtoh", 6 * MIB)
    check(lib.rt_copy_async(D2H, 9 * MIB), "dtoh", 9 * MIB)
    check(lib.rt_copy_2d(H2D, 1024, 3000), "htod", 1024 * 3000)
    check(lib.rt_copy_2d_async(D2D, 2048, 1500), "dtod", 2048 * 1500)
    check(lib.drv_htod(11 * MIB), "htod", 11 * MIB)
    check(lib.drv_dtoh(12 * MIB), "dtoh", 12 * MIB)
    check(lib.drv_dtod(13 * MIB), "dtod", 13 * MIB)
    check(lib.drv_htod_async(14 * MIB), "htod", 14 * MIB)
    check(lib.drv_dtoh_async(15 * MIB), "dtoh", 15 * MIB)
    check(lib.drv_dtod_async(8 * MIB), "dtod", 8 * MIB)
    check(lib.drv_any_dtoh(10 * MIB), "dtoh", 10 * MIB)
    check(lib.drv_any_htod_async(2 * MIB + 5), "htod", 2 * MIB + 5)
    check(lib.rt_copy(0, 3 * MIB), "htod", 0)  # host to host: no GPU copy
    check(lib.rt_many(H2D, 64 << 10, 100), "htod", 100 * (64 << 10), True)


def load():
    lib = ctypes.CDLL(sys.argv[1])
    lib.copier_setup.argtypes = [ctypes.c_size_t]
    assert lib.copier_setup(16 * MIB) == 0
    for name in ("rt_copy", "rt_copy_async"):
        getattr(lib, name).argtypes = [ctypes.c_int, ctypes.c_size_t]
    for name in ("rt_copy_2d", "rt_copy_2d_async"):
        getattr(lib, name).argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t]
    lib.rt_many.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    for name in ("rt_default_dtoh", "drv_htod", "drv_dtoh", "drv_dtod", "drv_htod_async"):
        getattr(lib, name).argtypes = [ctypes.c_size_t]
    for name in ("drv_dtoh_async", "drv_dtod_async", "drv_any_dtoh", "drv_any_htod_async"):
        getattr(lib, name).argtypes = [ctypes.c_size_t]
    return lib


if sys.argv[2] == "api":
    import spyglass

    copier = load()
    spyglass.start()
    copies(copier)
    print(json.dumps({"truth": truth, "profile": spyglass.stop()}))
elif sys.argv[2] == "fork":
    copier = load()
    pid = os.fork()
    if pid == 0:
        copier.rt_copy(D2H, 13 * MIB)  # the child's copy
        sys.exit(0)
    os.waitpid(pid, 0)
else:
    copies(load())
    print(json.dumps({"truth": truth}))
