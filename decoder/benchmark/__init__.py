"""The benchmarks that ship with the package (`cky bench`).

experiments: Xiao et al. 2009 and Venugopal et al. 2007 on a system (`cky bench`, `cky bench --quick`);
report: their results.json and results.md; plots: their figures (the optional `plot` extra);
speed: words and sentences per second of one decoding process (`cky bench --speed`).
The long research benchmarks (search, two-pass, Moses, SDIG) live in the repository's bench/ and
run from a clone (`python -m bench ...`).
"""
