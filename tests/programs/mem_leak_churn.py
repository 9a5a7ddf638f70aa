"""One line keeps every 1 MiB block it allocates (a leak: 200 of them stay in a list); the
line next to it allocates 8 MiB blocks that die at once (churn, no growth)."""

LEAKS = 200
kept = []


def churn():
    for _ in range(2):
        tmp = bytearray(8 << 20)  # mem:churn
        del tmp


for _ in range(LEAKS):
    kept.append(bytearray(1 << 20))  # mem:leak
    churn()
print(len(kept))
