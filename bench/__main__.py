"""`python -m bench ...` (from the root of a clone): `cky bench ...`, with the research benchmarks of bench/."""
import sys

from decoder.cli import main

sys.exit(main(["bench", *sys.argv[1:]]))
