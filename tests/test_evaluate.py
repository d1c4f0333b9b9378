"""BLEU and chrF: `cky evaluate` agrees with sacrebleu's command line; statistics give the same BLEU."""
import json
import subprocess
import sys

import numpy as np
import pytest
from sacrebleu.metrics import BLEU

from decoder.evaluate import (BleuStatistics, N_STATS, bleu_from_stats, bleu_from_stats_array, corpus_bleu,
                              paired_bootstrap)

REFERENCES = [
    "In the beginning God created the heavens and the earth.",
    "The earth was without form and void, and darkness was upon the face of the deep.",
    "And God said, Let there be light: and there was light.",
    "Jesus wept.",
    "And the evening and the morning were the first day.",
]
HYPOTHESES = [
    "In the beginning God created heaven and the earth.",
    "And the earth was without form, and void; and darkness was on the face of the deep.",
    "God said, let there be light, and there was light.",
    "Jesus cried.",
    "The evening and the morning were the first day.",
]


@pytest.fixture
def files(tmp_path):
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("\n".join(HYPOTHESES) + "\n", encoding="utf-8")
    ref.write_text("\n".join(REFERENCES) + "\n", encoding="utf-8")
    return str(hyp), str(ref)


def sacrebleu_cli(hyp, ref, *options):
    out = subprocess.run([sys.executable, "-m", "sacrebleu", ref, "-i", hyp, "-m", "bleu", "chrf", "-b", *options],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)  # with two metrics, -b prints a JSON list of scores


@pytest.mark.parametrize("tokenize", ["13a", "none"])
def test_cky_evaluate_matches_sacrebleu_command_line(files, tokenize):
    hyp, ref = files
    expected_bleu, expected_chrf = sacrebleu_cli(hyp, ref, "--tokenize", tokenize)
    out = subprocess.run([sys.executable, "-m", "decoder.cli", "evaluate", "--hyp", hyp, "--ref", ref,
                          "--tokenize", tokenize, "--json"], capture_output=True, text=True, check=True).stdout
    result = json.loads(out)
    assert round(result["bleu"], 1) == expected_bleu
    assert round(result["chrf"], 1) == expected_chrf
    assert f"tok:{tokenize}" in result["bleu_signature"]
    text = subprocess.run([sys.executable, "-m", "decoder.cli", "evaluate", "--hyp", hyp, "--ref", ref],
                          capture_output=True, text=True, check=True).stdout
    assert "BLEU = " in text and "version:" in text  # the signature is printed


def test_summed_statistics_give_corpus_bleu():
    stats = BleuStatistics(REFERENCES).corpus(HYPOTHESES)
    assert stats.shape == (len(HYPOTHESES), N_STATS)
    expected = corpus_bleu(HYPOTHESES, REFERENCES).score
    assert bleu_from_stats(stats.sum(axis=0)) == pytest.approx(expected, abs=1e-9)
    assert bleu_from_stats_array(stats.sum(axis=0))[0] == pytest.approx(expected, abs=1e-9)


def test_vectorized_bleu_equals_sacrebleu_formula_including_zero_counts():
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(300):
        hyp_len, ref_len = rng.integers(0, 30, size=2)
        total = np.array([max(hyp_len - n, 0) for n in range(4)])
        correct = np.minimum(total, rng.integers(0, 8, size=4)) * (rng.random(4) < 0.7)
        rows.append([hyp_len, ref_len, *correct, *total])
    rows = np.array(rows, dtype=np.int64)
    fast = bleu_from_stats_array(rows)
    for row, value in zip(rows, fast):
        expected = BLEU.compute_bleu(list(row[2:6]), list(row[6:]), int(row[0]), int(row[1]), "exp").score
        assert value == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_paired_bootstrap_against_baseline():
    worse = [" ".join(h.split()[:3]) for h in HYPOTHESES]
    results = paired_bootstrap(("left", worse), [("icr", HYPOTHESES), ("right", list(worse))], REFERENCES,
                               samples=200)
    assert results["left"]["p_value"] is None
    assert results["right"]["p_value"] == 1.0  # the same output as the baseline
    assert results["icr"]["bleu"] > results["left"]["bleu"]
    assert 0.0 <= results["icr"]["p_value"] <= 1.0
