"""Which search driver implements each value of the `search` setting.

A driver is a ChartSearchDriver (decoder.search.driver) or a subclass: the same
grammar arrays, chart export, read-back and k-best, another compiled engine.
Drivers are imported on first use, so a decoder loads only the engine it runs.
"""
from __future__ import annotations

import importlib

from ..errors import SettingsError

# search setting -> (module, class); the names are decoder.settings.SEARCH_ALGORITHMS'
SEARCH_DRIVERS = {
    "cube": ("decoder.search.driver", "ChartSearchDriver"),
    "incremental": ("decoder.search.incremental", "IncrementalSearchDriver"),
    "two-pass": ("decoder.search.two_pass", "TwoPassSearchDriver"),
}


def search_driver(algorithm: str):
    """The driver class of `search = ALGORITHM`; a SettingsError when no driver implements it."""
    if algorithm not in SEARCH_DRIVERS:
        raise SettingsError(None, f"`search = {algorithm!r}`: no search driver implements it "
                                  f"(drivers: {', '.join(sorted(SEARCH_DRIVERS))})")
    module, name = SEARCH_DRIVERS[algorithm]
    return getattr(importlib.import_module(module), name)
