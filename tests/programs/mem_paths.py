"""Allocations of every kind through tests/ext/alloc_paths.c, from an object loaded in one
of three ways, profiled with the API; prints the bytes the C code allocated per kind.

usage: mem_paths.py HOW EXT_DIR OUT_JSON
  HOW: before   the library is loaded with ctypes before spyglass.start()
       ctypes   it is loaded with ctypes after start(), and used at once
       import   the extension module is imported after start(), and used at once
EXT_DIR holds alloc_paths<EXT_SUFFIX> and a plain copy of it, liballoc_paths.so.
"""

import ctypes
import json
import sys
from pathlib import Path

import spyglass

HOW, EXT_DIR, OUT = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
KINDS = ["malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "mmap", "mremap"]
SIZE = 40 << 20
COUNT = 4


def load_ctypes():
    lib = ctypes.CDLL(str(EXT_DIR / "liballoc_paths.so"))
    lib.ap_run.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
    lib.ap_run.restype = ctypes.c_longlong
    return lib.ap_run, lib.ap_release


truth = {}
if HOW == "before":
    run, release = load_ctypes()
    spyglass.start(program_path=[str(Path(__file__).parent)])
else:
    spyglass.start(program_path=[str(Path(__file__).parent)])
    if HOW == "ctypes":
        run, release = load_ctypes()
    else:
        sys.path.insert(0, str(EXT_DIR))
        import alloc_paths

        run, release = alloc_paths.run, alloc_paths.release
truth["malloc"] = run(0, SIZE, COUNT)  # KIND malloc
truth["calloc"] = run(1, SIZE, COUNT)  # KIND calloc
truth["realloc"] = run(2, SIZE, COUNT)  # KIND realloc
truth["posix_memalign"] = run(3, SIZE, COUNT)  # KIND posix_memalign
truth["aligned_alloc"] = run(4, SIZE, COUNT)  # KIND aligned_alloc
truth["mmap"] = run(5, SIZE, COUNT)  # KIND mmap
truth["mremap"] = run(6, SIZE, COUNT)  # KIND mremap
release()
spyglass.stop(OUT)
print(json.dumps(truth))
