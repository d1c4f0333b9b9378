"""The research benchmarks of the repository (not installed with the package): run them from a clone,
as `python -m bench ...` (the same options as `cky bench`) or `python -m bench.bench_NAME ...`.

Their output goes by default to RESULTS, under build/ (ignored by git); the few results the docs
cite are copied to bench/results/ deliberately.
"""
import os

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(REPOSITORY, "build", "bench")
