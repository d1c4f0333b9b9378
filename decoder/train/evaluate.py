"""The evaluate stage: translate the test set with the finished system and score it.

The translations are written tokenized (test.out, what BLEU here is computed on, as
in the Bible recipe: tokenized, lowercased text against the tokenized references)
and detokenized by the target tokenizer (test.detok). BLEU and chrF come from
decoder.evaluate (sacreBLEU, tokenize "none"). The test set is decoded on `workers` processes, or on a
Dask cluster (`client`): the same translations either way.
"""
from __future__ import annotations

from pathlib import Path

from ..data.tokenize import TOKENIZERS
from ..evaluate import corpus_bleu, corpus_chrf
from .split import read_lines, write_lines


def evaluate_system(config: Path, test_source: Path, test_target: Path, tokenizer: str, output: Path,
                    detokenized: Path, workers: int, progress: bool = True, client=None) -> dict:
    from ..decoder import Decoder

    sentences, references = read_lines(test_source), read_lines(test_target)
    decoder = Decoder.from_config(config)
    translations = decoder.translate_batch(sentences, workers=workers, progress=progress, cluster=client)
    hypotheses = [t.text if t.error is None else "" for t in translations]
    write_lines(output, hypotheses)
    write_lines(detokenized, (TOKENIZERS[tokenizer].detokenize(h.split()) for h in hypotheses))
    bleu, chrf = corpus_bleu(hypotheses, [references], tokenize="none"), corpus_chrf(hypotheses, [references])
    return {"test_sentences": len(sentences), "failed": sum(t.error is not None for t in translations),
            "bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2),
            "bleu_precisions": [round(p, 1) for p in bleu.precisions], "bleu_brevity_penalty": round(bleu.bp, 3),
            "scored_on": "tokenized, lowercased text (test.out)"}
