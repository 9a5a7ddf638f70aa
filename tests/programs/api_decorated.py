"""`@spyglass.profile` on one of two busy functions; run under `spyglass run`, the report
must be narrowed to the decorated function."""

import spyglass


@spyglass.profile
def chosen():
    total = 0
    for i in range(2_500_000):
        total = (total * 31 + i) % 1_000_003  # decorated:hot
    return total


def not_chosen():
    total = 0
    for i in range(1_500_000):
        total = (total * 17 + i) % 1_000_003  # undecorated:hot
    return total


def main():
    print(not_chosen(), chosen(), not_chosen())


if __name__ == "__main__":
    main()
