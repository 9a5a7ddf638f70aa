"""Does some work and ends normally: exit status 0."""


def work():
    total = 0
    for i in range(1_000_000):
        total = (total + i * i) % 1_000_003  # exit:work
    return total


print("before", work())
