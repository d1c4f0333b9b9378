"""MERT: the exact line search on a hand-made k-best list, and the loop's stopping rule."""
import math
import os
import pathlib
import stat

import numpy as np
import pytest

from decoder.evaluate import BleuStatistics
from decoder.tune import KbestPool, line_search, run_mert, upper_envelope

# Two dev sentences, references "a b c d" and "e f g h", two features (f1, f2).
# Start at w = (1, 0) and search along d = (0, 1): the score of a hypothesis
# with features (x, y) is the line x + g*y.
REFERENCES = ["a b c d", "e f g h"]
KBEST = [
    [("a b c d", {"f1": 0.0, "f2": 1.0}),    # h1: g           perfect
     ("a b x y", {"f1": 1.0, "f2": 0.0}),    # h2: 1           2/1/0/0 matches
     ("x y z w", {"f1": 0.5, "f2": -1.0})],  # h3: 0.5 - g     no match
    [("e f g h", {"f1": 0.0, "f2": 2.0}),    # k1: 2g          perfect
     ("e f x y", {"f1": 1.0, "f2": 0.0}),    # k2: 1           2/1/0/0 matches
     ("x y z w", {"f1": -2.0, "f2": 4.0})],  # k3: 4g - 2      no match
]
# Worked by hand. Sentence 1's envelope: h3 until g = -0.5 (0.5 - g = 1), h2 until
# g = 1, then h1. Sentence 2's: k2 until g = 0.5 (2g = 1), k1 until g = 1 (4g - 2 = 2g),
# then k3. All outputs have 4 words, so the brevity penalty is 1, and matched / total
# n-grams (n = 1..4, totals 8/6/4/2) with sacrebleu's 'exp' smoothing (an order with no
# match counts 1/(2^k * total), k = how many such orders so far) are:
#   g < -0.5        h3 + k2: 2/8 1/6 (0) (0) -> 1/8 1/8   BLEU = (2/8 * 1/6 * 1/8 * 1/8)^(1/4)
#   -0.5 <= g < 0.5 h2 + k2: 4/8 2/6 (0) (0) -> 1/8 1/8   BLEU = (4/8 * 2/6 * 1/8 * 1/8)^(1/4) = 22.59
#   0.5 <= g < 1    h2 + k1: 6/8 4/6 2/4 1/2             BLEU = (1/8)^(1/4) = 59.46  <- best
#   g >= 1          h1 + k3: 4/8 3/6 2/4 1/2             BLEU = 50.00
# So the line search moves to the middle of [0.5, 1): g = 0.75.
BLEU_AT_ZERO = 100 * (4 / 8 * 2 / 6 * 1 / 8 * 1 / 8) ** 0.25
BEST_BLEU = 100 * (1 / 8) ** 0.25


def hand_made_pool():
    pool = KbestPool(["f1", "f2"], BleuStatistics(REFERENCES, tokenize="none"))
    for sentence, kbest in enumerate(KBEST):
        for text, features in kbest:
            assert pool.add(sentence, text, features)
    return pool


def test_upper_envelope_of_one_sentence():
    lines, starts = upper_envelope([0.0, 1.0, 0.5], [1.0, 0.0, -1.0])  # h1, h2, h3 at w = (1, 0), d = (0, 1)
    assert lines == [2, 1, 0]
    assert starts == [-math.inf, -0.5, 1.0]


def test_upper_envelope_drops_dominated_and_parallel_lines():
    # y = 0 (always below y = 1), two parallel lines with slope 1: only the higher one counts
    lines, starts = upper_envelope([1.0, 0.0, -5.0, -3.0], [0.0, 0.0, 1.0, 1.0])
    assert lines == [0, 3]
    assert starts == [-math.inf, 4.0]


def test_line_search_finds_the_hand_worked_optimum():
    features, stats, offsets = hand_made_pool().arrays()
    result = line_search(features, stats, offsets, np.array([1.0, 0.0]), np.array([0.0, 1.0]),
                         keep_intervals=True)
    assert result.step == pytest.approx(0.75)
    assert result.bleu == pytest.approx(BEST_BLEU)
    assert result.bleu_at_zero == pytest.approx(BLEU_AT_ZERO)
    bounds = [(left, right) for left, right, _ in result.intervals]
    assert bounds == [(-math.inf, -0.5), (-0.5, 0.5), (0.5, 1.0), (1.0, math.inf)]
    assert [b for _, _, b in result.intervals][2:] == pytest.approx([BEST_BLEU, 50.0])


def test_line_search_stays_put_when_nothing_is_better():
    features, stats, offsets = hand_made_pool().arrays()
    # from w = (1, 0.75) the intervals above shift by -0.75: g = 0 is inside the best one, [-0.25, 0.25)
    weights = np.array([1.0, 0.75])
    result = line_search(features, stats, offsets, weights, np.array([0.0, 1.0]))
    assert result.step == 0.0
    assert result.bleu == pytest.approx(BEST_BLEU) == pytest.approx(result.bleu_at_zero)


def test_ties_are_broken_against_the_better_hypothesis():
    # Two outputs with the same features: no weights can make the decoder prefer the
    # good one, so the line search must not count on it.
    pool = KbestPool(["f1", "f2"], BleuStatistics(["a b c d"], tokenize="none"))
    pool.add(0, "a b c d", {"f1": 1.0, "f2": 0.5})
    pool.add(0, "x y z w", {"f1": 1.0, "f2": 0.5})
    features, stats, offsets = pool.arrays()
    result = line_search(features, stats, offsets, np.array([1.0, 0.0]), np.array([0.0, 1.0]))
    assert result.bleu == 0.0 and result.step == 0.0


def test_mert_loop_reaches_the_optimum_and_stops_when_kbest_lists_repeat():
    decoded = []

    def decode_kbest(weights):
        # the same hypotheses whatever the weights (so the second iteration adds nothing), best first
        decoded.append(dict(weights))
        score = lambda hypothesis: sum(weights[name] * value for name, value in hypothesis[1].items())
        return [sorted(kbest, key=score, reverse=True) for kbest in KBEST]

    result = run_mert(decode_kbest, REFERENCES, {"f1": 2.0, "f2": 0.0}, max_iterations=5, restarts=5,
                      tokenize="none", progress=False, trust_region=None)
    assert result.bleu == pytest.approx(BEST_BLEU)  # (h1, k1) together is impossible: 59.46 is the maximum
    assert len(decoded) == 2 and "unchanged" in result.stopped
    assert sum(abs(w) for w in result.weights.values()) == pytest.approx(2.0)  # the initial scale is kept
    assert decoded[1] == result.weights
    assert [h["decoded_bleu"] for h in result.history] == pytest.approx([BLEU_AT_ZERO, BEST_BLEU])


class RankingDecoder:
    """Stands in for Decoder in `cky tune`: its k-best lists are KBEST ranked by its weights."""

    def __init__(self, weights):
        self.weights = dict(weights)

    def kbest(self, sentence, k, unique=True):
        from types import SimpleNamespace

        kbest = KBEST[int(sentence)]
        score = lambda h: sum(self.weights.get(name, 0.0) * value for name, value in h[1].items())
        return [SimpleNamespace(text=t, features=f) for t, f in sorted(kbest, key=score, reverse=True)][:k]


def test_cky_tune_writes_a_config_with_the_tuned_weights(tmp_path, monkeypatch):
    import json

    import decoder.tune.run as tune_cli
    from decoder.cli import main
    from decoder.tune.config import read_config

    monkeypatch.setattr(tune_cli, "decoder_from_config", lambda config: RankingDecoder(config["weights"]))
    config = tmp_path / "config.toml"
    config.write_text('store = "store"\npop_limit = 100\n\n[weights]\nf1 = 1.0\nf2 = 0.0\n')
    (tmp_path / "dev.src").write_text("0\n1\n")
    (tmp_path / "dev.ref").write_text("\n".join(REFERENCES) + "\n")
    out = tmp_path / "tuned.toml"
    assert main(["tune", "--config", str(config), "--dev-src", str(tmp_path / "dev.src"), "--dev-ref",
                 str(tmp_path / "dev.ref"), "--out", str(out), "--tokenize", "none", "--quiet",
                 "--restarts", "3", "--trust-region", "0"]) == 0
    tuned = read_config(str(out))
    assert tuned["store"] == "store" and tuned["pop_limit"] == 100  # everything else is kept
    ranked = RankingDecoder(tuned["weights"])
    one_best = [ranked.kbest(str(i), 1)[0].text for i in range(2)]
    assert one_best in (["a b x y", "e f g h"], ["a b c d", "e f x y"])  # a BLEU 59.46 pair
    log = json.loads(pathlib.Path(str(out) + ".log.json").read_text())
    assert log["bleu"] == pytest.approx(BEST_BLEU)
    assert out.read_text().startswith("# MERT-tuned weights")


def test_cky_tune_refuses_bad_arguments_before_decoding(tmp_path, monkeypatch, capsys):
    """A k-best size of 0, a misspelt --fixed feature and an --out that is a device were accepted (the
    last one replaced /dev/full by a file); each is now refused, naming it, before any decoding."""
    import decoder.tune.run as tune_cli
    from decoder.cli import main

    decoded = []
    monkeypatch.setattr(tune_cli, "decoder_from_config",
                        lambda config: decoded.append(1) or RankingDecoder(config["weights"]))
    config = tmp_path / "config.toml"
    config.write_text('store = "store"\n\n[weights]\nf1 = 1.0\nf2 = 0.0\n')
    (tmp_path / "dev.src").write_text("0\n1\n")
    (tmp_path / "dev.ref").write_text("\n".join(REFERENCES) + "\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    base = ["tune", "--config", str(config), "--dev-src", str(tmp_path / "dev.src"), "--dev-ref",
            str(tmp_path / "dev.ref"), "--quiet", "--tokenize", "none"]
    for flags in (["--kbest", "0"], ["--max-iterations", "0"], ["--trust-region", "-0.5"], ["--workers", "0"]):
        with pytest.raises(SystemExit) as exit_:
            main(base + flags)
        assert exit_.value.code == 2 and f"argument {flags[0]}" in capsys.readouterr().err
    assert main(base + ["--out", str(fifo)]) == 1
    assert f"cky tune: {fifo}: is not a regular file" in capsys.readouterr().err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and not decoded
    assert main(base + ["--out", str(tmp_path / "tuned.toml"), "--fixed", "f3"]) == 1
    assert "fixed feature `f3` is not a feature of" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "tuned.toml")
    (tmp_path / "tuned.toml.mert.npz").mkdir()  # where the checkpoint goes: refused before the first decoding
    assert main(base + ["--out", str(tmp_path / "tuned.toml")]) == 1
    assert "tuned.toml.mert.npz: is not a regular file" in capsys.readouterr().err
    assert len(decoded) == 1  # (the decoder built to read the features; no k-best list decoded)


def test_trust_region_clips_the_line_search():
    features, stats, offsets = hand_made_pool().arrays()
    # the best interval [0.5, 1) lies outside g <= 0.3: the best inside is [-0.5, 0.3], where g = 0 is
    result = line_search(features, stats, offsets, np.array([1.0, 0.0]), np.array([0.0, 1.0]), low=-0.3, high=0.3)
    assert result.step == 0.0 and result.bleu == pytest.approx(BLEU_AT_ZERO)
    # with room up to 0.8 it moves into [0.5, 0.8]: the middle, 0.65
    result = line_search(features, stats, offsets, np.array([1.0, 0.0]), np.array([0.0, 1.0]), low=-0.3, high=0.8)
    assert result.step == pytest.approx(0.65) and result.bleu == pytest.approx(BEST_BLEU)


def test_mert_moves_the_weights_at_most_the_trust_region():
    def decode_kbest(weights):
        score = lambda hypothesis: sum(weights[name] * value for name, value in hypothesis[1].items())
        return [sorted(kbest, key=score, reverse=True) for kbest in KBEST]

    # from (0.8, 0.2), f2/f1 must reach [0.5, 1): f2 may grow by 20% per iteration, f1 shrink by 20%:
    # (0.64, 0.24) is still short (0.375); with 80% it can get there
    stuck = run_mert(decode_kbest, REFERENCES, {"f1": 0.8, "f2": 0.2}, max_iterations=5, restarts=3,
                     tokenize="none", progress=False, trust_region=0.2)
    assert stuck.bleu == pytest.approx(BLEU_AT_ZERO)
    moved = run_mert(decode_kbest, REFERENCES, {"f1": 0.8, "f2": 0.2}, max_iterations=5, restarts=3,
                     tokenize="none", progress=False, trust_region=0.8)
    assert moved.bleu == pytest.approx(BEST_BLEU)
    assert 0.5 <= moved.weights["f2"] / moved.weights["f1"] < 1.0


# ---- checkpoints: an interrupted run resumes exactly ------------------------------------------------

def candidate_lists(n_sentences=8, n_candidates=12, seed=3):
    """References and per sentence a fixed set of candidate translations with random features: a
    stand-in decoder whose k-best lists change with the weights, so that MERT runs several iterations."""
    rng = np.random.default_rng(seed)
    vocabulary = "a b c d e f g h".split()
    references = [" ".join(rng.choice(vocabulary, 6)) for _ in range(n_sentences)]
    candidates = [[(" ".join(rng.choice(vocabulary, 6)), {f"f{k}": float(v) for k, v in enumerate(rng.normal(size=3))})
                   for _ in range(n_candidates)] for _ in range(n_sentences)]
    return references, candidates


def ranking_decoder(candidates, k=3, calls=None, interrupt_at=None):
    def decode_kbest(weights):
        if calls is not None:
            calls.append(dict(weights))
            if interrupt_at is not None and len(calls) == interrupt_at:
                raise KeyboardInterrupt
        score = lambda h: sum(weights[name] * value for name, value in h[1].items())
        return [sorted(c, key=score, reverse=True)[:k] for c in candidates]
    return decode_kbest


def without_seconds(history):
    """The history's numbers but its timings as one flat dict ("STEP:KEY", nested tables' keys dotted),
    which pytest.approx compares (it compares no nested structures)."""
    def flat(table, prefix):
        for key, value in table.items():
            if isinstance(value, dict):
                yield from flat(value, f"{prefix}{key}.")
            elif key != "seconds":
                yield f"{prefix}{key}", value

    return {key: value for index, step in enumerate(history) for key, value in flat(step, f"{index}:")}


def test_mert_resumed_from_any_checkpoint_ends_as_the_run_that_was_never_stopped(tmp_path):
    from decoder.tune.checkpoint import load_state, save_state

    references, candidates = candidate_lists()
    arguments = dict(max_iterations=6, restarts=3, tokenize="none", progress=False, seed=7)
    initial = {"f0": 1.0, "f1": 0.5, "f2": -0.5}
    states = []
    whole = run_mert(ranking_decoder(candidates), references, initial,
                     checkpoint=lambda state: states.append(state.iteration) or
                     save_state(str(tmp_path / f"{state.iteration}.npz"), state, {"run": 1}), **arguments)
    assert len(states) >= 3  # the test needs a loop that goes on for a while
    for iteration in states:
        state = load_state(str(tmp_path / f"{iteration}.npz"), {"run": 1})
        assert state.iteration == iteration and len(state.history) == iteration
        calls = []
        resumed = run_mert(ranking_decoder(candidates, calls=calls), references, initial, resume_from=state,
                           **arguments)
        assert resumed.weights == whole.weights and resumed.bleu == whole.bleu and resumed.stopped == whole.stopped
        assert without_seconds(resumed.history) == pytest.approx(without_seconds(whole.history))
        assert len(calls) == len(whole.history) - iteration  # only the iterations after the checkpoint decode
    # the random restarts matter: without the generator's state the resumed run would differ somewhere
    state = load_state(str(tmp_path / f"{states[0]}.npz"), {"run": 1})
    state.rng_state = np.random.default_rng(12345).bit_generator.state
    other = run_mert(ranking_decoder(candidates), references, initial, resume_from=state, **arguments)
    assert without_seconds(other.history) != pytest.approx(without_seconds(whole.history))


def test_a_checkpoint_of_another_run_or_a_damaged_one_is_refused_naming_the_file(tmp_path):
    from decoder.errors import ResumeError
    from decoder.tune.checkpoint import load_state, save_state

    references, candidates = candidate_lists()
    path = str(tmp_path / "state.npz")
    run_mert(ranking_decoder(candidates), references, {"f0": 1.0, "f1": 0.5, "f2": -0.5}, max_iterations=2,
             restarts=1, tokenize="none", progress=False,
             checkpoint=lambda state: save_state(path, state, {"seed": 0, "kbest": 3}))
    with pytest.raises(ResumeError, match=r"state\.npz: was written by another tuning run \(seed: 0 -> 1\)"):
        load_state(path, {"seed": 1, "kbest": 3})
    with open(path, "r+b") as f:
        f.truncate(100)
    with pytest.raises(ResumeError, match=r"state\.npz: unreadable MERT checkpoint"):
        load_state(path, {"seed": 0, "kbest": 3})
    with pytest.raises(ResumeError, match=r"nothere\.npz: no MERT checkpoint"):
        load_state(str(tmp_path / "nothere.npz"), {})
    (tmp_path / "text.npz").write_text("not numpy\n")
    with pytest.raises(ResumeError, match=r"text\.npz: unreadable MERT checkpoint \(not a whole npz file\)"):
        load_state(str(tmp_path / "text.npz"), {})


def test_cky_tune_interrupted_then_resumed_writes_what_an_uninterrupted_run_writes(tmp_path, monkeypatch, capsys):
    import decoder.tune.run as tune_run
    from decoder.cli import main
    from decoder.tune.config import read_config

    references, candidates = candidate_lists()
    calls = []

    class Decoder:  # the stand-in for decoder_from_config's Decoder; Ctrl-C in the 3rd decoding
        def __init__(self, weights):
            self.weights = dict(weights)

        def kbest(self, sentence, k, unique=True):
            from types import SimpleNamespace

            if sentence == "0":
                calls.append(1)
                if len(calls) == interrupt_at[0]:
                    raise KeyboardInterrupt
            decode = ranking_decoder(candidates, k=k)
            return [SimpleNamespace(text=t, features=f)
                    for t, f in decode({**{"f0": 0, "f1": 0, "f2": 0}, **self.weights})[int(sentence)]]

    monkeypatch.setattr(tune_run, "decoder_from_config", lambda config: Decoder(config["weights"]))
    config = tmp_path / "config.toml"
    config.write_text('store = "store"\n\n[weights]\nf0 = 1.0\nf1 = 0.5\nf2 = -0.5\n')
    (tmp_path / "dev.src").write_text("".join(f"{i}\n" for i in range(len(candidates))))
    (tmp_path / "dev.ref").write_text("\n".join(references) + "\n")
    base = ["tune", "--config", str(config), "--dev-src", str(tmp_path / "dev.src"), "--dev-ref",
            str(tmp_path / "dev.ref"), "--tokenize", "none", "--quiet", "--restarts", "3", "--kbest", "3",
            "--max-iterations", "6", "--seed", "7"]
    interrupt_at = [0]
    assert main(base + ["--out", str(tmp_path / "whole.toml")]) == 0
    assert not (tmp_path / "whole.toml.mert.npz").exists()  # a finished run leaves no checkpoint
    n_decodings = len(calls)
    assert n_decodings >= 4
    calls.clear()
    capsys.readouterr()
    interrupt_at = [3]
    out = tmp_path / "tuned.toml"
    assert main(base + ["--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert f"MERT's state after iteration 2 is saved in {out}.mert.npz (continue with --resume)" in err
    assert not out.exists() and (tmp_path / "tuned.toml.mert.npz").exists()
    assert main(base + ["--out", str(out), "--resume", "--seed", "8"]) == 1
    assert "tuned.toml.mert.npz: was written by another tuning run (seed: 7 -> 8)" in capsys.readouterr().err
    interrupt_at = [0]
    calls.clear()
    assert main(base + ["--out", str(out), "--resume"]) == 0
    assert len(calls) == n_decodings - 2  # iterations 1-2 were not decoded again
    assert read_config(str(out))["weights"] == read_config(str(tmp_path / "whole.toml"))["weights"]
    assert not (tmp_path / "tuned.toml.mert.npz").exists()
