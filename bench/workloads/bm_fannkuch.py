"""fannkuch: count pancake flips over every permutation of 0..n-1 (fannkuch-redux)."""

from _driver import run

N = 8


def fannkuch(n):
    perm1 = list(range(n))
    count = [0] * n
    max_flips = 0
    checksum = 0
    index = 0
    r = n
    while True:
        while r != 1:
            count[r - 1] = r
            r -= 1
        first = perm1[0]
        if first:
            perm = perm1[:]
            flips = 0
            while first:
                perm[: first + 1] = perm[first::-1]
                flips += 1
                first = perm[0]
            if flips > max_flips:
                max_flips = flips
            checksum += -flips if index & 1 else flips
        index += 1
        while True:
            if r == n:
                return max_flips, checksum
            head = perm1[0]
            perm1[:r] = perm1[1 : r + 1]
            perm1[r] = head
            count[r] -= 1
            if count[r] > 0:
                break
            r += 1


def step(_i):
    max_flips, checksum = fannkuch(N)
    return max_flips * 1_000_000 + checksum


if __name__ == "__main__":
    run(step)
