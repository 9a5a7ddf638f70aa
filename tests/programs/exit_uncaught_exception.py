"""Does some work, then an uncaught ValueError raised two calls deep: exit status 1 and the
traceback printed as Python prints it."""


def work():
    total = 0
    for i in range(1_000_000):
        total = (total + i * i) % 1_000_003  # exit:work
    return total


def parse(value):
    raise ValueError(f"bad value: {value!r}")


def main():
    print("before", work())
    parse(work() % 100)
    print("after: not reached")


main()
