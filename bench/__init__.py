"""Benchmarks of cky-decoder (`python -m bench.<name>`)."""
