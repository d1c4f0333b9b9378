"""The limits `cky serve` puts on a request, and their defaults (their one home: the package
decoder.serve, its app and the `cky serve` flags import them from here)."""

# Words per sentence: the chart's time and memory grow with the square of the length.
DEFAULT_MAX_TOKENS = 200
DEFAULT_MAX_KBEST = 100
# Bytes per request body, and characters per sentence (words alone do not bound a sentence: one
# "word" may be megabytes long, and its answer several times that).
DEFAULT_MAX_BODY_BYTES = 65536
DEFAULT_MAX_CHARS = 10000
# Sentences waiting or decoding; a request beyond them is answered 503 at once.
DEFAULT_MAX_QUEUE = 32
# Host names every server answers to (Host and Origin headers), besides the address it serves on
# and `cky serve --allowed-host`.
LOCAL_HOSTS = ("localhost", "127.0.0.1")
