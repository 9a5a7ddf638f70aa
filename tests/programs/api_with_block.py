"""`with spyglass.profile(outfile=...)` around a busy function, in a program run with plain
python: the block's profile is written to argv[1]. Prints, as JSON, what the block's
result says about the run."""

import json
import sys

import spyglass


def busy():
    total = 0
    for i in range(3_000_000):
        total = (total * 31 + i) % 1_000_003  # api:block-hot
    return total


def outside():
    total = 0
    for i in range(1_000_000):
        total = (total * 17 + i) % 1_000_003  # api:outside-hot
    return total


def main(outfile):
    outside()
    with spyglass.profile(outfile=outfile) as p:
        busy()
    outside()
    result = p.result
    print(json.dumps({"result_is_dict": isinstance(result, dict), "samples": result["samples"]}))


if __name__ == "__main__":
    main(sys.argv[1])
