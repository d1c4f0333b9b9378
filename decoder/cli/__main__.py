"""`python -m decoder.cli COMMAND ...`, the same as the `cky` console script."""
import sys

from . import main

sys.exit(main())
