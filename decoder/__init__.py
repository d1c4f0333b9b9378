"""cky-decoder: syntax-based statistical machine translation.

Data flows one way: corpus (decoder.data) -> extraction (decoder.extract) ->
binarization (decoder.binarize) -> grammar store (decoder.store) -> decoding
(decoder.search) -> output and metrics (decoder.evaluate).
"""

__version__ = "0.1.0"
