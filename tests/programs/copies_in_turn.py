"""Two lines that take turns to copy 600 KB and 1.5 MB, 500 times (286 and 715 MiB)."""

a = bytearray(600_000)
b = bytearray(1_500_000)
for _ in range(500):
    x = bytes(a)  # copy:small
    y = bytes(b)  # copy:large
