"""Pure Python that spends its time in calls between Python functions: recursion, bound
methods, closures, generators, comprehensions, properties, classes with __init__,
super() and dataclasses. None of it calls into C code of any weight, so every marked
line must be Python time: the interpreter's own call machinery is Python.

usage: pure_python_calls.py [SECONDS]  (of CPU per kind of call; default 0.4)
"""

import sys
import time
from dataclasses import dataclass

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.4


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)  # pure:recursion


class Counter:
    def __init__(self):
        self.n = 0

    def bump(self, k):
        self.n += k
        return self.n

    @property
    def twice(self):
        return self.n * 2


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y


class Base:
    def __init__(self, v):
        self.v = v


class Child(Base):
    def __init__(self, v):
        super().__init__(v)


@dataclass
class Pair:
    a: int
    b: int


def numbers(n):
    for i in range(n):  # noqa: UP028 (a generator frame resumed each time is the point)
        yield i


def adder(k):
    def add(x):
        return x + k

    return add


def for_a_while(section):
    """Runs section(n) in batches for SECONDS of this thread's CPU."""
    end = time.thread_time() + SECONDS
    while time.thread_time() < end:
        section(2000)


def recursion(n):
    fib(16)


def method(n):
    counter = Counter()
    for i in range(n):
        counter.bump(i)  # pure:method


def prop(n):
    counter = Counter()
    total = 0
    for _ in range(n):
        total += counter.twice  # pure:property


def closure(n):
    add = adder(3)
    total = 0
    for i in range(n):
        total += add(i)  # pure:closure


def generator(n):
    total = 0
    for v in numbers(n):  # pure:generator
        total += v


def comprehension(n):
    return [i * i for i in range(n)]  # pure:comprehension


def instances(n):
    return [Point(i, -i) for i in range(n)]  # pure:class


def subclass(n):
    return [Child(i) for i in range(n)]  # pure:super


def dataclasses(n):
    return [Pair(i, i) for i in range(n)]  # pure:dataclass


SECTIONS = [
    recursion,
    method,
    prop,
    closure,
    generator,
    comprehension,
    instances,
    subclass,
    dataclasses,
]

for section in SECTIONS:
    for_a_while(section)
print("done")
