"""More tasks than the await scan reads at once: N tasks (default 600) each await a sleep
of S seconds (default 0.3) concurrently, each timed by the program itself.

usage: asyncio_many_tasks.py [N] [S]; prints {"tasks": N, "await_s": the sum of the
measured awaits}.
"""

import asyncio
import json
import sys
import time

total = 0.0


async def one(seconds):
    global total
    started = time.perf_counter()
    await asyncio.sleep(seconds)  # await:many
    total += time.perf_counter() - started


async def main(n, seconds):
    await asyncio.gather(*(one(seconds) for _ in range(n)))


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 0.3
    asyncio.run(main(n, seconds))
    print(json.dumps({"tasks": n, "await_s": total}))
