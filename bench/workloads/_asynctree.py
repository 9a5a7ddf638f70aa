"""A tree of asyncio tasks: every inner node gathers its children, every leaf does some
(simulated) I/O, CPU work or a memoized lookup, depending on the variant. Shared by the
four async_tree*.py workloads."""

import asyncio

DEPTH = 5
BRANCHING = 5
IO_DELAY_S = 0.005
MEMO_KEYS = 97


class Tree:
    def __init__(self, variant):
        self.variant = variant
        self.leaves = 0
        self.total = 0
        self.memo = {}

    async def fake_io(self):
        await asyncio.sleep(IO_DELAY_S)

    def cpu_work(self, seed):
        acc = seed
        for k in range(60):
            acc = (acc * 48271 + k) % 2147483647
        return acc & 0xFFFF

    async def memoized(self, key):
        if key in self.memo:
            return self.memo[key]
        await self.fake_io()
        value = self.cpu_work(key)
        self.memo[key] = value
        return value

    async def leaf(self, index):
        self.leaves += 1
        if self.variant == "plain":
            await asyncio.sleep(0)
            value = index & 7
        elif self.variant == "io":
            await self.fake_io()
            value = index & 7
        elif self.variant == "cpu_io_mixed":
            if index % 2:
                await self.fake_io()
                value = 1
            else:
                value = self.cpu_work(index)
        else:
            value = await self.memoized(index % MEMO_KEYS)
        self.total = (self.total + value) & 0xFFFFFFFF

    async def node(self, depth, index):
        if depth == 0:
            await self.leaf(index)
            return
        children = [self.node(depth - 1, index * BRANCHING + k) for k in range(BRANCHING)]
        await asyncio.gather(*children)

    async def root(self):
        await self.node(DEPTH, 0)


def make_step(variant):
    def step(_i):
        tree = Tree(variant)
        asyncio.run(tree.root())
        return tree.leaves * 65536 + tree.total

    return step
