"""Creates the file named in argv[1]: proof that the program ran."""

import sys

with open(sys.argv[1], "w", encoding="utf-8") as fh:
    fh.write("the target ran\n")
