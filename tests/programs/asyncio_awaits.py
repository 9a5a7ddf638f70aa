"""asyncio tasks awaiting for known times, each await timed by the program itself.

- gather of two coroutines awaiting 0.6 s and 0.3 s concurrently;
- a nested chain: outer() awaits middle(), which awaits a sleep of 0.4 s;
- async for over a class-based iterator whose __anext__ awaits 0.1 s, three times;
- async with over a context manager whose __aenter__ awaits 0.25 s;
- a task awaiting a 5 s sleep, cancelled after 0.2 s.

Each await line carries a marker comment (await:NAME) the test finds it by. Prints, as
JSON, each await's measured time in seconds (time.perf_counter around it).
"""

import asyncio
import json
import time

measured = {}


def note(key, started):
    measured[key] = measured.get(key, 0.0) + time.perf_counter() - started


async def long_wait():
    started = time.perf_counter()
    await asyncio.sleep(0.6)  # await:long
    note("long", started)


async def short_wait():
    started = time.perf_counter()
    await asyncio.sleep(0.3)  # await:short
    note("short", started)


async def middle():
    started = time.perf_counter()
    await asyncio.sleep(0.4)  # await:nested
    note("nested", started)


async def outer():
    await middle()  # await:outer


class Ticks:
    def __init__(self, n):
        self.n = n

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self.n == 0:
            raise StopAsyncIteration
        self.n -= 1
        started = time.perf_counter()
        await asyncio.sleep(0.1)  # await:anext
        note("anext", started)
        return self.n


class Slow:
    async def __aenter__(self):
        started = time.perf_counter()
        await asyncio.sleep(0.25)  # await:aenter
        note("aenter", started)
        return self

    async def __aexit__(self, *exc):
        return False


async def iterate():
    started = time.perf_counter()
    async for _ in Ticks(3):  # await:for
        pass
    note("for", started)


async def enter():
    started = time.perf_counter()
    async with Slow():  # await:with
        pass
    note("with", started)


async def doomed():
    started = time.perf_counter()
    try:
        await asyncio.sleep(5)  # await:cancelled
    finally:
        note("cancelled", started)


async def main():
    await asyncio.gather(long_wait(), short_wait())
    await outer()
    await iterate()
    await enter()
    task = asyncio.create_task(doomed(), name="doomed")
    await asyncio.sleep(0.2)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass


if __name__ == "__main__":
    asyncio.run(main())
    print(json.dumps(measured))
