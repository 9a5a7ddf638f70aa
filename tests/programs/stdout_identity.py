"""Writes a lot to stdout (text in several scripts, raw bytes, long lines, no final
newline), and a little to stderr: what it writes must come out byte-identical under
spyglass, whose report goes to stderr only after the program's own output."""

import sys

WORDS = [
    "plain ascii",
    "café crème",
    "naïve façade",
    "Ελληνικά",
    "日本語のテキスト",
    "emoji 🐍🔭",
    "tab\tand\\backslash",
]


def main():
    print("stdout identity: start")
    for i in range(20_000):
        print(i, WORDS[i % len(WORDS)], i * i % 9973, sep=" | ")
    sys.stdout.write("a very long line: " + "xyzé" * 5_000 + "\n")
    print("unicode escapes:", "\u00e9\u4e2d\U0001f600", repr("\u00e9"))
    sys.stdout.flush()
    sys.stdout.buffer.write(b"raw bytes: \x00\x01\xfe\xff\r\n")
    sys.stdout.buffer.flush()
    print("to stderr", file=sys.stderr)
    for i in range(2_000):
        print(f"{i:05d}", end="," if i % 25 else "\n")
    sys.stdout.write("no final newline")


if __name__ == "__main__":
    main()
