"""The limits `cky serve` puts on a request, and their defaults (the home of these values: the
package decoder.serve, its app and the `cky serve` flags import them from here)."""

# Words per sentence: the chart's time and memory grow with the square of the length (a sentence's
# derivation is written as JSON one nested level per glued piece; create_app raises Python's recursion
# limit to what --max-tokens needs: decoder.serve.app.allow_recursion_for).
DEFAULT_MAX_TOKENS = 200
DEFAULT_MAX_KBEST = 100
