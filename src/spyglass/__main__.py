"""`python -m spyglass ...`"""

from spyglass.cli.main import program

if __name__ == "__main__":
    program()
