"""`python -m spyglass ...`"""

import sys

from spyglass.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
