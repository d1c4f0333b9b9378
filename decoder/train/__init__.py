"""`cky train`: from a plain parallel corpus to a tuned system, one resumable command.

    from decoder.train.pipeline import TrainSettings, train
    system = train(TrainSettings(source, target, "es", "en", out="system"))   # system.json's content

One module per stage (clean, split, tokenize, parse, align, lm, extract, compile,
tune, evaluate), `stages` (the runner: checksums, skipping, atomic outputs),
`system` (config.toml and system.json), `requirements` (the tools, checked before
any work) and `pipeline` (the stages of a run, wired together). See docs/train.md.
"""
