"""The footprint rises to ~400 MiB at one line (100 MiB kept, then 300 MiB at once), falls
back, then rises again to only ~150 MiB elsewhere: the peak is at the 300 MiB line."""


def base():
    return [bytearray(1 << 20) for _ in range(100)]  # mem:base


def main():
    kept = base()
    peak = bytearray(300 << 20)  # mem:peak
    size = len(peak) + sum(map(len, kept))
    del peak, kept
    later = bytearray(150 << 20)  # mem:later
    return size + len(later)


print(main())
