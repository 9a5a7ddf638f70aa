"""An asyncio task that works about 8 ms between 2 ms sleeps, 150 times (a busy async
worker). Prints, as JSON on stdout, the wall time its awaits took as it measured them."""

import asyncio
import json
import time

waited = 0.0


def crunch():
    s = 0
    for i in range(160_000):
        s += i % 7
    return s


async def worker():
    global waited
    for _ in range(150):
        crunch()
        t0 = time.perf_counter()
        await asyncio.sleep(0.002)  # await:sleep
        waited += time.perf_counter() - t0


asyncio.run(worker())
print(json.dumps({"await": waited}))
