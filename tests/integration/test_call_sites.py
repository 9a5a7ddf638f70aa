"""What a call instruction is calling, read off the caller's value stack as the sampler
reads it: each shape of call into Python code must read as Python, and calls into C
(builtins, C methods, C types) as native. The ground truth is the program itself: a
Python callee asks what its caller's frame is calling, so the answer is known by
construction; a C function that calls back into Python code is its caller's callee."""

from __future__ import annotations

import dis
import functools
import inspect
import sys
import types
from dataclasses import dataclass
from typing import Callable

import pytest

from spyglass import _native
from spyglass.runtime.interpreter import bytecode_flags

FLAGS = bytecode_flags(_native.BYTECODE_FLAGS)


def caller_callee(depth: int = 2) -> tuple[object, str]:
    """(callee, kind) of the frame `depth` frames above this one."""
    return _native.callee_of(sys._getframe(depth), FLAGS)


seen: list[tuple[object, str]] = []


def note(*args: object, **kwargs: object) -> int:
    seen.append(caller_callee())
    return 0


class Point:
    def __init__(self, x: int, y: int) -> None:
        seen.append(caller_callee())
        self.x, self.y = x, y

    def method(self, k: int) -> int:
        seen.append(caller_callee())
        return k

    @classmethod
    def make(cls) -> int:
        seen.append(caller_callee())
        return 0

    @staticmethod
    def static() -> int:
        seen.append(caller_callee())
        return 0

    def __call__(self) -> int:
        seen.append(caller_callee())
        return 0


class Base:
    def __init__(self, v: int) -> None:
        seen.append(caller_callee())


class Child(Base):
    def __init__(self, v: int) -> None:
        super().__init__(v)


class WithNew:
    def __new__(cls) -> WithNew:
        seen.append(caller_callee())
        return object.__new__(cls)


@dataclass
class Pair:
    a: int
    b: int

    def __post_init__(self) -> None:
        seen.append(caller_callee(3))  # above the generated __init__


def closure() -> Callable[[], int]:
    k = 1

    def inner() -> int:
        seen.append(caller_callee())
        return k

    return inner


def recurse(n: int) -> int:
    if n == 0:
        seen.append(caller_callee())
        return 0
    return recurse(n - 1) + 0


PYTHON_CALLS: dict[str, Callable[[], object]] = {
    "function": lambda: note(1, 2),
    "keywords": lambda: note(1, b=2),
    "star args": lambda: note(*[1], **{"b": 2}),
    "star args only": lambda: note(*[1]),
    "class": lambda: Point(1, 2),
    "class with keywords": lambda: Point(1, y=2),
    "method": lambda: Point(1, 2).method(3),
    "bound method held": lambda: (lambda m: m(3))(Point(1, 2).method),
    "classmethod": lambda: Point.make(),
    "staticmethod": lambda: Point.static(),
    "callable instance": lambda: Point(1, 2)(),
    "super": lambda: Child(1),
    "dataclass": lambda: Pair(1, 2),
    "closure": lambda: closure()(),
    "recursion": lambda: recurse(3),
    "in a try block": lambda: _in_try(),
    "in a with block": lambda: _in_with(),
    "in a comprehension": lambda: [note(i) for i in range(1)],
}


def _in_try() -> None:
    try:
        note(1)
    finally:
        note(2)


def _in_with() -> None:
    with open(__file__, encoding="utf-8"):
        note(1)


@pytest.mark.parametrize("shape", sorted(PYTHON_CALLS))
def test_calls_into_python_code_read_as_python(shape: str) -> None:
    seen.clear()
    PYTHON_CALLS[shape]()
    assert seen, "the callee did not run"
    assert all(kind == "python" for _, kind in seen), seen


def test_a_class_with_its_own_new_is_python() -> None:
    seen.clear()
    WithNew()
    assert [kind for _, kind in seen] == ["python"]


def test_the_callee_read_is_the_callable_itself() -> None:
    seen.clear()
    note(1)
    Point(1, 2)
    assert seen[0][0] is note
    assert seen[1][0] is Point


# C functions that call back into Python code: inside the callback, the caller's frame is
# executing the call to the C function.
def _key(x: int) -> int:
    seen.append(caller_callee())
    return x


NATIVE_CALLS: dict[str, tuple[Callable[[], object], object]] = {
    "builtin": (lambda: sorted([2, 1], key=_key), sorted),
    "builtin type": (lambda: list(map(_key, [1])), list),
    "C method": (lambda: [3, 1].sort(key=_key), None),
    "functools.reduce": (lambda: functools.reduce(lambda a, b: _key(a + b), [1, 2]), None),
    "max with key": (lambda: max([1, 2], key=_key), max),
}


@pytest.mark.parametrize("shape", sorted(NATIVE_CALLS))
def test_calls_into_c_read_as_native(shape: str) -> None:
    call, callee = NATIVE_CALLS[shape]
    seen.clear()
    call()
    assert seen, "the callback did not run"
    kinds = {kind for _, kind in seen}
    # A lambda between the C function and _key is its own Python frame: skip it.
    if shape == "functools.reduce":
        return
    assert kinds == {"native"}, seen
    if callee is not None:
        assert all(got is callee for got, _ in seen), seen


def _all_code(module: types.ModuleType) -> list[types.CodeType]:
    out: list[types.CodeType] = []
    todo = [
        obj.__code__
        for obj in vars(module).values()
        if inspect.isfunction(obj) and obj.__module__ == module.__name__
    ]
    for cls in vars(module).values():
        if inspect.isclass(cls) and cls.__module__ == module.__name__:
            todo += [f.__code__ for f in vars(cls).values() if inspect.isfunction(f)]
    while todo:
        code = todo.pop()
        out.append(code)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return out


CALLS = {
    name
    for name in ("CALL", "CALL_KW", "PRECALL", "CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_METHOD")
    if name in dis.opmap
} | {"CALL_FUNCTION_EX"}


@pytest.mark.parametrize("module_name", ["argparse", "dataclasses", "asyncio.tasks", "inspect"])
def test_every_reachable_call_in_library_code_gets_a_slot(module_name: str) -> None:
    """Over real code (loops, try/except/finally, with, async, comprehensions), call
    instructions get a stack slot inside the frame's stack, and nothing else does. 3.9
    leaves some dead code after a `raise` in an except clause: a few calls may be out of
    reach, never more than 1 in 100."""
    module = __import__(module_name, fromlist=["_"])
    codes = _all_code(module)
    assert len(codes) > 10
    calls = 0
    unreached = []
    for code in codes:
        table = _native.call_site_table(code, FLAGS)
        assert len(table) == len(code.co_code) // 2
        for ins in dis.get_instructions(code):
            entry = table[ins.offset // 2]
            if ins.opname in CALLS:
                calls += 1
                if entry < 0:
                    unreached.append((code.co_name, ins.offset))
                assert (entry >> 1) + (entry & 1) < code.co_stacksize, (code, ins)
            else:
                assert entry < 0, (code, ins)
    assert calls > 20
    assert len(unreached) <= calls // 100, unreached
