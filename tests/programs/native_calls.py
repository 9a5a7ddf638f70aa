"""Lines that spend their time in C: spin_ext (GIL held, GIL released), hashlib and zlib.
Each marked line must be reported as native time.

A sample carries all the CPU the thread used since its previous sample, so the first sample
on a line also carries the end of whatever ran before it (up to one sampling interval).
settle() runs a little pure Python before each marked line, so that what a marked line gets
is its own time and not, say, the page faults of the line that built its input.

usage: native_calls.py [SPIN_SECONDS]   (spin_ext must be importable)
"""

import hashlib
import os
import sys
import time
import zlib

import spin_ext


def settle(seconds=0.03):
    deadline = time.thread_time() + seconds
    while time.thread_time() < deadline:
        pass


def spin_holding_gil(seconds):
    settle()
    return spin_ext.spin_with_gil(seconds, cpu=True)  # native:spin_with_gil


def spin_releasing_gil(seconds):
    settle()
    return spin_ext.spin_without_gil(seconds, cpu=True)  # native:spin_without_gil


def hash_big_buffer():
    block = b"\x5a" * (256 << 20)
    settle()
    return hashlib.sha256(block).hexdigest()  # native:sha256


def compress_hex_text():
    text = os.urandom(2 << 20).hex().encode()  # 4 MiB that compress to about half
    settle()
    return len(zlib.compress(text, 9))  # native:zlib


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.25
    print("spin_with_gil", spin_holding_gil(seconds) != 0)
    print("spin_without_gil", spin_releasing_gil(seconds) != 0)
    print("sha256", hash_big_buffer())
    print("zlib", compress_hex_text())


if __name__ == "__main__":
    main()
