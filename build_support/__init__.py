"""Helpers used by setup.py at build time (not part of the installed package)."""
