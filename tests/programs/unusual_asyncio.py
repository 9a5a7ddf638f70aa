"""asyncio: a gather of coroutines, each alternating CPU work in Python with asyncio.sleep.

Prints each coroutine's result in order (deterministic).
usage: unusual_asyncio.py
"""

import asyncio

WORKERS = 4
ROUNDS = 5


async def crunch(index):
    total = 0
    for _ in range(ROUNDS):
        for i in range(200_000):
            total = (total + i * index) % 1_000_003  # asyncio:hot
        await asyncio.sleep(0.01)  # asyncio:sleep
    return index, ROUNDS, total


async def main():
    results = await asyncio.gather(*(crunch(i) for i in range(1, WORKERS + 1)))
    for index, steps, total in results:
        print(f"crunch({index}): {steps} rounds, total {total}")


if __name__ == "__main__":
    asyncio.run(main())
