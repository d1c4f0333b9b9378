"""`python -m bench ...` (from the repository root): the same as `cky bench ...`."""
import sys

from decoder.cli import main

sys.exit(main(["bench", *sys.argv[1:]]))
