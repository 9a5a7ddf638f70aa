"""A coroutine that blocks its event loop (time.sleep, the classic asyncio mistake) among
600 tasks that await, then a sleep after asyncio.run has returned. Each is timed by the
program itself.

prints {"blocked_s": the blocking calls' time, "await_s": the waiters' awaits summed,
"after_s": the sleep after the loop}.
"""

import asyncio
import json
import time

awaited = 0.0
blocked = 0.0


async def waiter():
    global awaited
    started = time.perf_counter()
    await asyncio.sleep(0.6)  # await:waiter
    awaited += time.perf_counter() - started


async def blocker():
    global blocked
    # The waiters start first: a task that first runs after a block and then suspends is
    # charged the block as await (docs/cpu-sampling.md, asyncio limits).
    await asyncio.sleep(0.05)
    for _ in range(5):
        started = time.perf_counter()
        time.sleep(0.1)  # wait:blocking
        blocked += time.perf_counter() - started
        await asyncio.sleep(0)


async def main():
    await asyncio.gather(blocker(), *(waiter() for _ in range(600)))


asyncio.run(main())
started = time.perf_counter()
time.sleep(0.5)  # wait:after
after = time.perf_counter() - started
print(json.dumps({"blocked_s": blocked, "await_s": awaited, "after_s": after}))
