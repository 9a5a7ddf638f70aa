"""pprint: pretty-print a large nested structure with pprint.pformat and pprint.saferepr."""

import pprint

from _driver import run


def make_data(n):
    rows = []
    for i in range(n):
        rows.append(
            {
                "id": i,
                "name": f"record-{i:05d}",
                "tags": ("alpha", "beta", f"t{i % 13}"),
                "scores": [i * 0.5, i / 7, (i * 31) % 101],
                "nested": {
                    "depth": i % 5,
                    "path": ["root", f"n{i % 17}", "leaf"],
                    "ok": i % 3 == 0,
                },
            }
        )
    return rows


DATA = make_data(2000)


def step(i):
    chunk = DATA[(i * 97) % 1000 :][:600]
    text = pprint.pformat(chunk, width=88)
    short = pprint.saferepr(chunk[:200])
    return len(text) * 7 + len(short)


if __name__ == "__main__":
    run(step)
