"""The compiled hot loops of the decoder (ext/*.pyx, built by setup.py as decoder._ext).

They are required: every importer gets them through `compiled_module`, so that a
missing or stale build fails at import with one message saying how to build them,
never with a silent fall-back to slower Python.
"""
import importlib

BUILD_HINT = "build the extensions with `make install` or `python setup.py build_ext --inplace`"


def compiled_module(name: str):
    """The compiled module decoder._ext.<name> (e.g. "_extract"); ImportError if it is not built."""
    qualified = f"{__name__}.{name}"
    try:
        return importlib.import_module(qualified)
    except ImportError as error:
        raise ImportError(f"compiled module {qualified} cannot be imported ({error}); {BUILD_HINT}",
                          name=qualified) from error
