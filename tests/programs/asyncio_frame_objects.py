"""300 tasks suspended two coroutines deep for a while; prints how many of their
coroutines have a frame object, which plain python makes only when asked (on 3.11+; on
3.9 and 3.10 every coroutine has one), and how long the tasks awaited."""

import asyncio
import gc
import json
import time
import types


async def leaf():
    await asyncio.sleep(0.6)  # await:leaf


async def middle():
    await leaf()


def has_frame_object(coro):
    # A coroutine's frame object, once made, is among what it refers to: asking for it
    # with cr_frame would make it.
    return any(isinstance(r, types.FrameType) for r in gc.get_referents(coro))


async def main():
    start = time.perf_counter()
    tasks = [asyncio.create_task(middle()) for _ in range(300)]
    await asyncio.sleep(0.3)
    coros = [t.get_coro() for t in tasks]
    made = sum(has_frame_object(c) + has_frame_object(c.cr_await) for c in coros)
    await asyncio.gather(*tasks)
    return made, time.perf_counter() - start


made, elapsed = asyncio.run(main())
print(json.dumps({"frame_objects": made, "await_s": 300 * elapsed}))
