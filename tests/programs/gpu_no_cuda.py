"""Lists the CUDA libraries mapped in this process after some copying work: with none
loaded by the program, spyglass must have loaded none either."""

import json

buffers = [bytearray(1 << 20) for _ in range(8)]
copies = [bytes(b) for b in buffers for _ in range(4)]
with open("/proc/self/maps", encoding="utf-8") as maps:
    mapped = sorted({line.split()[-1] for line in maps if "libcuda" in line})
print(json.dumps({"cuda": mapped}))
