"""Argument parsing shared by the subcommands: one-line errors and value types."""

from __future__ import annotations

import argparse

from spyglass._constants import MAX_MEMORY_WINDOW, MIN_MEMORY_WINDOW

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """Reports a bad command line in one clear line, not a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def csv_list(value: str) -> list[str]:
    return [part for part in (p.strip() for p in value.split(",")) if part]


_SIZE_SUFFIXES = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_text(n: int) -> str:
    """``n`` bytes as byte_size() reads them back: the largest suffix that divides it."""
    for suffix in ("G", "M", "K"):
        if n % _SIZE_SUFFIXES[suffix] == 0:
            return f"{n // _SIZE_SUFFIXES[suffix]}{suffix}"
    return str(n)


def byte_size(value: str) -> int:
    """A size in bytes, with an optional binary K/M/G suffix ("512K", "1M", "1.5G")."""
    text = value.strip().upper().removesuffix("IB").removesuffix("B")
    suffix = text[-1:] if text[-1:] in ("K", "M", "G") else ""
    number = text[: len(text) - len(suffix)]
    try:
        n = int(float(number) * _SIZE_SUFFIXES[suffix])
    except (ValueError, OverflowError):  # "inf" overflows, "nan" is not a value
        raise argparse.ArgumentTypeError(f"not a size: {value!r} (try 1M or 512K)") from None
    if not MIN_MEMORY_WINDOW <= n <= MAX_MEMORY_WINDOW:
        low, high = size_text(MIN_MEMORY_WINDOW), size_text(MAX_MEMORY_WINDOW)
        raise argparse.ArgumentTypeError(f"must be between {low} and {high}, not {value!r}")
    return n


def int_at_least(minimum: int, unit: str = "") -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}{unit}, not {n}")
        return n

    return parse


def number_between(low: float, high: float, what: str = "number") -> Callable[[str], float]:
    def parse(value: str) -> float:
        try:
            x = float(value.rstrip("%")) if what == "percentage" else float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a {what}: {value!r}") from None
        if not low <= x <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g}, not {value}")
        return x

    return parse


columns = int_at_least(40, " columns")
