"""An allocator's arena (tests/ext/alloc_paths.c, built by the test into the directory given
as argv[1]): 1 GiB of address space reserved with MAP_NORESERVE, as mimalloc reserves its
arena (pyarrow's pool, behind pandas's string columns): a first one used and unmapped;
then one of which 96 MiB is used, 64 MiB given back with madvise and 16 MiB mapped afresh
over it (MAP_FIXED) and used, kept to the end. Prints, as JSON on stdout, what is kept
and the resident growth the kernel measured meanwhile."""

import json
import sys
import time

sys.path.insert(0, sys.argv[1])
import alloc_paths


def rss_mib():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS"))


def settle():
    time.sleep(0.4)  # a few of the collector's measurements


def main():
    alloc_paths.arena_reserve(512)  # arena:first
    alloc_paths.arena_use(0, 40)
    settle()
    alloc_paths.arena_release()  # arena:unmapped
    settle()
    before = rss_mib()
    alloc_paths.arena_reserve(1024)  # arena:reserve
    alloc_paths.arena_use(0, 96)  # arena:use
    settle()
    alloc_paths.arena_purge(0, 64)  # arena:purge
    settle()
    alloc_paths.arena_commit(200, 16)  # arena:again (mapped over the arena, MAP_FIXED)
    settle()
    after = rss_mib()
    print(json.dumps({"kept_mib": 96 - 64 + 16, "rss_growth_mib": after - before}))


if __name__ == "__main__":
    main()
