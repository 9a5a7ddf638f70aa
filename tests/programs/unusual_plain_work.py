"""Plain Python work in a function of the script and in a function of a sibling module.

The test copies this file (and writes the sibling module) under unusual names: a directory
with spaces and a non-ASCII file name. The sibling module's name is given as argv[1].
Prints where Python says the two files are, as JSON.
usage: unusual_plain_work.py SIBLING_MODULE
"""

import importlib
import json
import sys


def local_work():
    n = 0
    for i in range(1_200_000):
        n = (n + i * 7) % 1_000_003  # plain:local
    return n


def main():
    sibling = importlib.import_module(sys.argv[1])
    result = (local_work(), sibling.sibling_work())
    print(json.dumps({"main": __file__, "sibling": sibling.__file__, "result": result}))


if __name__ == "__main__":
    main()
