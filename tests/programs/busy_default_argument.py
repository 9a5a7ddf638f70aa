"""A function whose default argument takes CPU to compute in C (no Python frame of its own):
the def line runs in the module's code (evaluating the default, making the function) and
in the function's own (its start), so that line's samples are the module's while the line
is also the function's. Then the function itself runs."""


def busy(n):
    total = 0
    for i in range(n):
        total = (total + i * i) % 999_983
    return total


def with_default(limit=sum(range(20_000_000))):  # noqa: B008  the point of the program
    return busy(limit % 1000 + 300_000)


print(with_default())
