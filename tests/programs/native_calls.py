"""Lines that spend their time in C: spin_ext (GIL held, GIL released), hashlib and zlib.
Each marked line must be reported as native time.

usage: native_calls.py [SPIN_SECONDS]   (spin_ext must be importable)
"""

import hashlib
import os
import sys
import zlib

import spin_ext


def spin_holding_gil(seconds):
    return spin_ext.spin_with_gil(seconds, cpu=True)  # native:spin_with_gil


def spin_releasing_gil(seconds):
    return spin_ext.spin_without_gil(seconds, cpu=True)  # native:spin_without_gil


def hash_big_buffer():
    block = b"\x5a" * (256 << 20)
    return hashlib.sha256(block).hexdigest()  # native:sha256


def compress_noise():
    noise = os.urandom(6 << 20)
    return len(zlib.compress(noise, 6))  # native:zlib


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 0.25
    print("spin_with_gil", spin_holding_gil(seconds) != 0)
    print("spin_without_gil", spin_releasing_gil(seconds) != 0)
    print("sha256", hash_big_buffer())
    print("zlib", compress_noise())


if __name__ == "__main__":
    main()
