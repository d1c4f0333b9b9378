"""cky-decoder: syntax-based statistical machine translation.

Data flows one way: corpus (decoder.data) -> extraction (decoder.extract) ->
binarization (decoder.binarize) -> grammar store (decoder.store) -> decoding
(decoder.decoder, decoder.search) -> output and metrics (decoder.evaluate,
decoder.tune).

The main entry points are importable from here, lazily, so that `import
decoder` stays cheap for the command line:

    from decoder import Decoder, binarize, GrammarStore, read_rules, SearchSettings, load_config
"""

__version__ = "0.1.0"

_EXPORTS = {
    "Decoder": "decoder.decoder",
    "Translation": "decoder.translation",
    "GrammarStore": "decoder.store",
    "binarize": "decoder.binarize",
    "unbinarize": "decoder.binarize",
    "Rule": "decoder.grammar",
    "read_rules": "decoder.grammar",
    "write_rules": "decoder.grammar",
    "LanguageModel": "decoder.lm",
    "SearchSettings": "decoder.settings",
    "load_config": "decoder.config",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'decoder' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
