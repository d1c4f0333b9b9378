"""`python -m decoder.serve ...`: the same as `cky serve ...`."""
import sys

from ..cli.serve import run

sys.exit(run())
