"""Weight tuning: MERT (Och 2003) over merged k-best lists with an exact line search.

    from decoder.tune import run_mert, line_search, KbestPool
    from decoder.tune import tune        # the whole loop on a config (decoder.tune.run)
"""
from .mert import KbestPool, MertResult, MertState, line_search, optimize_weights, run_mert, upper_envelope
from .run import tune

__all__ = ["KbestPool", "MertResult", "MertState", "line_search", "optimize_weights", "run_mert", "tune", "upper_envelope"]
