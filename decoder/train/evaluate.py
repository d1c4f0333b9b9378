"""The evaluate stage: translate the test set with the finished system and score it twice.

The tokenized test source is decoded as it is (tokenized input, decoder.text.tokenized_input);
the translations are written tokenized (test.out) and as the user reads them (test.detok):
recased by the system's recasing model and detokenized by the target tokenizer, the words
passed through untranslated keeping the casing of the raw test source (decoder.text, the
same as `cky translate` on raw text gives). Two scores:

- `bleu`, `chrf`: on tokenized, lowercased text (test.out) against the tokenized references, as
  the Bible recipe has always reported (sacreBLEU, tokenize "none");
- `sacrebleu`, `sacrebleu_chrf`: sacreBLEU's default (13a tokenization, cased) on test.detok
  against the raw references, what users compare with other systems' published scores.

The test set is decoded on `workers` processes, or on a Dask cluster (`client`): the same
translations either way.
"""
from __future__ import annotations

from pathlib import Path

from ..data.tokenize import TOKENIZERS
from ..evaluate import bleu_metric, corpus_bleu, corpus_chrf
from ..text import TextPipeline, tokenized_input
from .split import read_lines, write_lines


def readable_text(pipeline: TextPipeline, tokens: str, unknown_words, raw_source: str | None) -> str:
    """A tokenized translation as the user reads it: recased (the unknown words' casing from the raw
    source line, if given) and detokenized."""
    hints = {}
    if raw_source is not None:
        hints = pipeline.hints(*pipeline.source_tokens(raw_source), unknown_words)
    return pipeline.output_text(tokens.split(), hints)


def evaluate_system(config: Path, test_source: Path, test_target: Path, tokenizer: str, output: Path,
                    detokenized: Path, workers: int, progress: bool = True, client=None,
                    raw_source: Path | None = None, raw_target: Path | None = None) -> dict:
    from ..decoder import Decoder

    sentences, references = read_lines(test_source), read_lines(test_target)
    decoder = Decoder.from_config(config)
    translations = decoder.translate_batch(sentences, workers=workers, progress=progress, cluster=client,
                                           **tokenized_input(decoder))
    hypotheses = [t.tokens if t.error is None else "" for t in translations]
    write_lines(output, hypotheses)
    raw_sources = read_lines(raw_source) if raw_source is not None else [None] * len(sentences)
    if decoder.text.raw:
        texts = [readable_text(decoder.text, h, t.unknown_words, raw) if h else ""
                 for h, t, raw in zip(hypotheses, translations, raw_sources)]
    else:  # a config without languages: detokenized only
        texts = [TOKENIZERS[tokenizer].detokenize(h.split()) for h in hypotheses]
    write_lines(detokenized, texts)
    bleu, chrf = corpus_bleu(hypotheses, [references], tokenize="none"), corpus_chrf(hypotheses, [references])
    scores = {"test_sentences": len(sentences), "failed": sum(t.error is not None for t in translations),
              "bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2),
              "bleu_precisions": [round(p, 1) for p in bleu.precisions], "bleu_brevity_penalty": round(bleu.bp, 3),
              "scored_on": "tokenized, lowercased text (test.out)"}
    if raw_target is not None:
        raw_references = read_lines(raw_target)
        metric = bleu_metric()  # sacreBLEU's defaults: 13a, cased
        cased = metric.corpus_score(texts, [raw_references])
        cased_chrf = corpus_chrf(texts, [raw_references])
        scores.update(sacrebleu=round(cased.score, 2), sacrebleu_chrf=round(cased_chrf.score, 2),
                      sacrebleu_signature=str(metric.get_signature()),
                      sacrebleu_scored_on="detokenized, recased text (test.detok) against the raw references")
    return scores
