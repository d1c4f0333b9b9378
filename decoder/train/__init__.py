"""`cky train`: from a plain parallel corpus to a tuned system, one resumable command.

    from decoder.train.pipeline import TrainSettings, train
    system = train(TrainSettings(source, target, "es", "en", out="system"))   # system.json's content
    train(TrainSettings(source, target, "es", "en", out="sdig", system="sdig"))  # the SDIG system

One module per stage (clean, split, tokenize, recase, parse, align, lm, extract, compile,
tune, evaluate; for the SDIG system dependencies and induce), `stages` (the runner: checksums, skipping, atomic outputs),
`system` (config.toml and system.json), `requirements` (the tools, checked before
any work) and `pipeline` (the stages of a run, wired together). See docs/train.md.
"""
