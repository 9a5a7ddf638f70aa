"""async_tree (io variant): see _asynctree.py."""

from _asynctree import make_step
from _driver import run

if __name__ == "__main__":
    run(make_step("io"))
