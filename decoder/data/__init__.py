"""The data side of the Spanish-to-English Bible system (`cky data bible-es-en`).

One module per concept: `bible` (SWORD dump, OSIS stripping, verse alignment,
shifted-chapter detection), `tokenize`, `split`, `trees` (link-grammar output
to Penn trees), `parse` (link-grammar worker pool with a hard time limit and a
chunked cache), `align` (eflomal + grow-diag-final-and), `lm_build` (KenLM),
`manifest`, `requirements` (Debian and PyPI packages) and `build` (the
pipeline that ties them together).
"""
