"""sympy: symbolic expansion, integration, printing and summation with the sympy package.

Each unit of work clears sympy's cache first, so repeated units redo the work."""

from _driver import run
from sympy import Symbol, cos, exp, expand, integrate, oo, summation
from sympy.core.cache import clear_cache

x, y, z, k = Symbol("x"), Symbol("y"), Symbol("z"), Symbol("k", integer=True, positive=True)


def task_expand():
    return len(expand((x + y + z + 1) ** 9).args)


def task_integrate():
    return len(str(integrate(x**3 * exp(x) + x * cos(2 * x), x)))


def task_str():
    return len(str(expand((2 * x + 3 * y - z) ** 10)))


def task_sum():
    return len(str(summation(1 / k**4, (k, 1, oo)))) + len(str(summation(k**3, (k, 1, 40))))


TASKS = [task_expand, task_integrate, task_str, task_sum]


def step(i):
    clear_cache()
    return TASKS[i % len(TASKS)]()


if __name__ == "__main__":
    run(step)
