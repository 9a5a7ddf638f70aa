"""spyglass.start() late in a running interpreter: numpy is imported and memory of every
kind is allocated before profiling starts; after start() that memory is freed (blocks the
hooks never saw allocated), then more is allocated and freed. Writes the profile to OUTFILE.

usage: mem_api_late_start.py OUTFILE"""

import json
import sys

import numpy as np

import spyglass

arrays = [np.ones(4 << 20, dtype=np.uint8) for _ in range(16)]  # 64 MiB in big blocks
strings = [str(i) * 3 for i in range(300_000)]  # many small Python objects
buffers = [bytearray(100) for _ in range(50_000)]  # small blocks
mid = [bytearray(40 << 10) for _ in range(500)]  # 20 MiB of blocks under 64 KiB

spyglass.start()
del arrays, strings, buffers, mid  # frees of blocks allocated before start()
after = np.ones(64 << 20, dtype=np.uint8)  # late:alloc
del after
churn = [bytearray(1 << 16) for _ in range(200)]  # late:churn
del churn
profile = spyglass.stop(sys.argv[1])
print(json.dumps({"memory_profiled": profile["memory_profiled"]}))
