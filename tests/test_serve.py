"""`cky serve`'s JSON API (Starlette's TestClient) on the hand-written system of test_decoder:
what POST /translate returns against the Decoder and the grammar it was built from, the
per-cell chart counts against hand counts, and bad requests (4xx, the server keeps serving)."""
import json
import math
import sys
import threading
from collections import defaultdict

import pytest

pytest.importorskip("starlette", reason="cky serve needs the `serve` extra: pip install cky-decoder[serve]")
from starlette.testclient import TestClient  # noqa: E402

from decoder.decoder import Decoder  # noqa: E402
from decoder.grammar import read_rules, unescape_word  # noqa: E402
from decoder.serve import DEFAULT_MAX_TOKENS, create_app  # noqa: E402
from test_decoder import model, rules  # noqa: E402,F401  (the shared decoder fixture)

SENTENCE = "la casa verde es pequeña"


@pytest.fixture(scope="module")
def decoder(model):  # noqa: F811
    return Decoder.from_config(model / "config.toml")


@pytest.fixture(scope="module")
def client(decoder):
    with local_client(create_app(decoder)) as client:
        yield client


def shown(rule) -> dict:
    """How the API shows a source rule: nonterminals as [LABEL], words unescaped."""
    def side(items):
        return [f"[{rule.labels[x]}]" if isinstance(x, int) else unescape_word(x) for x in items]
    return {"lhs": rule.lhs, "source": side(rule.source), "target": side(rule.target), "tree": rule.tree}


def local_client(app, **options) -> TestClient:
    """A TestClient whose requests name localhost (the server refuses TestClient's default "testserver")."""
    return TestClient(app, base_url="http://localhost", **options)


def post(client, body, headers=None):
    return client.post("/translate", content=body if isinstance(body, bytes) else json.dumps(body),
                       headers={"Content-Type": "application/json", **(headers or {})})


def test_translate_returns_the_translation_and_its_stats(client, decoder):
    response = post(client, {"sentence": SENTENCE, "kbest": 3})
    assert response.status_code == 200
    result = response.json()
    expected = decoder.translate(SENTENCE)
    assert result["text"] == expected.text == "the green house is small"
    assert result["tree"] == expected.tree
    assert result["score"] == pytest.approx(expected.score)
    assert result["features"] == pytest.approx(expected.features)
    assert result["source"] == SENTENCE and result["derivation"]["symbol"] == "GOAL"
    # stats: what --stats-out writes (score, features and the search stats)
    for key in ("score", "features", "edges_proposed", "edges_kept", "lm_queries", "lm_queries_novel",
                "items_per_cell", "seconds", "chart_cells"):
        assert key in result["stats"]
    assert result["stats"]["items_per_cell"]["1"] == pytest.approx(expected.stats["items_per_cell"][1])
    kbest = decoder.kbest(SENTENCE, 3)
    assert [t["text"] for t in result["kbest"]] == [t.text for t in kbest]
    assert [t["score"] for t in result["kbest"]] == pytest.approx([t.score for t in kbest])


def test_rules_are_the_grammars_source_rules_with_their_binarization(client, decoder):
    result = post(client, {"sentence": SENTENCE}).json()
    grammar = rules()
    applied = [r for r in result["rules"] if "source" in r]
    assert {r["source_rule"] for r in applied} == {0, 3, 7, 8, 11, 14}  # la casa verde; NP; es pequeña; S
    for rule in applied:
        original = grammar[rule["source_rule"]]
        assert rule["source"] == shown(original)
        logs = [math.log(s) for s in original.scores]
        assert list(rule["rule_features"].values()) == pytest.approx(logs, abs=1e-6)
        assert rule["rule_score"] == pytest.approx(0.5 * logs[0] + 0.2 * logs[1], abs=1e-6)  # config weights
        # a rule of n symbols is binarized into n - 1 binary rules (one for a lexical rule)
        assert len(rule["binarization"]) == max(1, len(original.source) - 1)
        assert rule["binarization"][0].startswith(original.lhs + " -> ")
    np_rule = next(r for r in applied if r["source_rule"] == 11)  # NP -> DT NN JJ ||| DT JJ NN
    assert np_rule["span"] == [0, 3]
    assert np_rule["binarization"][1].endswith("-> [NN] [JJ] ||| [1] [0]")  # the inverted pair
    assert [r["rule"] for r in result["rules"] if "source" not in r] == ["glue-start"]


def test_rules_of_an_extracted_grammar_are_its_rule_table_entries(tmp_path_factory):
    # The fixture system's GHKM rules (with target tree fragments and a glue file): every source
    # rule the API shows, rebuilt from the store, is the rule-table entry of that index.
    from models.fixtures.build_fixture import build_fixture, fixture_store

    paths = build_fixture(str(tmp_path_factory.mktemp("fixture")))
    table = list(read_rules(paths["rules"]))
    decoder = Decoder(fixture_store(paths, "icr"), paths["lm"], glue=paths["glue"])
    with open(paths["test_es"], encoding="utf-8") as f:
        sentences = [line.strip() for line in f][:10]
    checked = 0
    with local_client(create_app(decoder)) as client:
        for sentence in sentences:
            result = post(client, {"sentence": sentence, "kbest": 2}).json()
            assert result["text"] == decoder.translate(sentence).text
            for rule in result["rules"]:
                if "source" in rule:
                    original = table[rule["source_rule"]]
                    assert rule["source"] == shown(original)
                    assert list(rule["rule_features"].values()) == pytest.approx(
                        [math.log(score) for score in original.scores], abs=1e-5)
                    checked += 1
    assert checked >= 50 and any(t.tree for t in table)


def test_chart_cells_count_items_and_edges_per_cell(client, decoder):
    # "la casa": DT "the" in (0,1); NN "house" and "home" in (1,2); NP "the house"/"the home" in (0,2),
    # each made by one edge (a bigram LM keeps the two NPs apart)
    cells = post(client, {"sentence": "la casa"}).json()["stats"]["chart_cells"]
    assert sorted(cells) == [[0, 1, 1, 1], [0, 2, 2, 2], [1, 1, 2, 2]]
    # on a longer sentence the cells agree with the per-length means (counted apart, in the C++ chart)
    stats = post(client, {"sentence": SENTENCE}).json()["stats"]
    n = stats["words"]
    by_length = defaultdict(int)
    for start, length, items, edges in stats["chart_cells"]:
        assert 0 <= start and start + length <= n and items >= 1 and edges >= items
        by_length[length] += items
    for length, (mean, _) in stats["items_per_cell"].items():
        assert by_length[int(length)] / (n - int(length) + 1) == pytest.approx(mean)


@pytest.mark.parametrize("body, status, message", [
    (b"{not json", 400, "not valid JSON"),
    (b"\xff\xfe", 400, "not valid JSON"),
    (b'["la casa"]', 400, "JSON object"),
    ({"text": "la casa"}, 422, 'no "sentence"'),
    ({"sentence": 42}, 422, "must be a string, not int"),
    ({"sentence": ["la", "casa"]}, 422, "must be a string, not list"),
    ({"sentence": None}, 422, "must be a string"),
    ({"sentence": ""}, 422, "empty"),
    ({"sentence": " \t "}, 422, "empty"),
    ({"sentence": "casa " * 1_000}, 413, f"1000 words; this server takes at most {DEFAULT_MAX_TOKENS}"),
    ({"sentence": "la casa", "kbest": 0}, 422, '"kbest" must be'),
    ({"sentence": "la casa", "kbest": "5"}, 422, '"kbest" must be'),
    ({"sentence": "la casa", "kbest": True}, 422, '"kbest" must be'),
    ({"sentence": "la casa", "kbest": 10_000}, 422, '"kbest" must be'),
])
def test_bad_requests_get_a_4xx_with_a_clear_message_and_the_server_keeps_serving(client, body, status, message):
    response = post(client, body)
    assert response.status_code == status
    assert message in response.json()["error"]
    assert post(client, {"sentence": "la casa"}).json()["text"] == "the house"


def test_max_tokens_is_a_setting(decoder):
    with local_client(create_app(decoder, max_tokens=3)) as client:
        assert post(client, {"sentence": "la casa verde"}).status_code == 200
        response = post(client, {"sentence": "la casa verde es"})
        assert response.status_code == 413 and "at most 3" in response.json()["error"]


def test_tokenize_as_decodes_raw_text_as_the_corpus_was_tokenized(decoder):
    raw = "La casa verde, es PEQUEÑA."
    with local_client(create_app(decoder, tokenize_as="es", max_tokens=7)) as client:
        result = post(client, {"sentence": raw}).json()
        assert result["source"] == "la casa verde , es pequeña ."
        assert result["text"] == decoder.translate("la casa verde , es pequeña .").text
        assert client.get("/health").json()["tokenize"] == "es"
        response = post(client, {"sentence": "La casa, la casa, la casa."})  # 6 words, 9 tokens: over 7
        assert response.status_code == 413 and "9 words" in response.json()["error"]
    with local_client(create_app(decoder)) as client:  # without it the sentence is taken as it comes
        assert post(client, {"sentence": raw}).json()["source"] == raw


def test_a_long_sentence_of_unknown_words_is_answered_without_raising_the_recursion_limit(decoder):
    """Each unknown word is a glue level of the derivation's JSON: 600 of them nest about 1,200 levels,
    deeper than json.dumps may go at Python's default recursion limit (1,000). The server writes it
    without recursion and leaves the limit alone (under a raised limit, deep JSON in a request overflows
    the C stack)."""
    words = [f"zq{i}" for i in range(600)]
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        with local_client(create_app(decoder, max_tokens=20_000), raise_server_exceptions=False) as client:
            response = post(client, {"sentence": " ".join(words), "kbest": 2})
            assert sys.getrecursionlimit() == 1000
        assert response.status_code == 200, response.text
        sys.setrecursionlimit(10_000)  # the test's json.loads recurses; the server's encoder does not
        result = response.json()
    finally:
        sys.setrecursionlimit(saved)
    assert result["text"].split() == words
    assert sum(rule["rule"] == "oov" for rule in result["rules"]) == 600
    depth, node = 0, result["derivation"]
    while node["children"]:
        depth, node = depth + 1, node["children"][0]
    assert depth >= 600
    assert [rule["rule"] for rule in result["rules"]][:3] == ["glue-concat"] * 3  # pre-order, top first


def test_a_failing_sentence_is_a_500_and_the_server_keeps_serving(decoder, monkeypatch):
    original = Decoder.translate

    def failing(self, sentence):
        if "perro" in sentence:
            raise RuntimeError("forced failure")
        return original(self, sentence)

    monkeypatch.setattr(Decoder, "translate", failing)
    with local_client(create_app(decoder), raise_server_exceptions=False) as client:
        response = post(client, {"sentence": "el perro"})
        assert response.status_code == 500 and "forced failure" in response.json()["error"]
        assert post(client, {"sentence": "la casa"}).json()["text"] == "the house"


def test_decoding_runs_off_the_event_loop(decoder, monkeypatch):
    # A decode that blocks until released: /health must answer meanwhile (it would hang if
    # decoding ran on the event loop, and the decode would then have finished by timing out).
    entered, release = threading.Event(), threading.Event()
    original = Decoder.translate

    def blocking(self, sentence):
        entered.set()
        release.wait(10)
        return original(self, sentence)

    monkeypatch.setattr(Decoder, "translate", blocking)
    with local_client(create_app(decoder)) as client:
        results = []
        worker = threading.Thread(target=lambda: results.append(post(client, {"sentence": "la casa"})))
        worker.start()
        assert entered.wait(5)
        assert client.get("/health").json()["status"] == "ok"
        assert worker.is_alive() and not release.is_set()
        release.set()
        worker.join(10)
        assert results[0].status_code == 200 and results[0].json()["text"] == "the house"


def test_the_page_and_its_scripts_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and 'id="sentence"' in page.text and "/static/viewer.js" in page.text
    assert "drawHeatmap" in client.get("/static/viewer.js").text
    assert client.get("/translate").status_code == 405


def test_cli_reports_a_missing_config(tmp_path, capsys):
    from decoder.cli.serve import run

    assert run(["--config", str(tmp_path / "missing.toml")]) == 1
    assert "missing.toml" in capsys.readouterr().err


def test_without_the_serve_extra_the_cli_still_builds_and_says_what_to_install():
    # `cky` builds every subcommand's parser: decoder.cli.serve must import without starlette/uvicorn.
    import subprocess
    import sys

    script = """
import argparse, sys
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("starlette", "uvicorn"):
            raise ImportError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Missing())
from decoder.cli.serve import add_arguments, main
parser = argparse.ArgumentParser()
add_arguments(parser)
sys.exit(main(parser.parse_args(["--config", "model.toml"])))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "is missing: pip install 'cky-decoder[serve]'" in done.stderr


@pytest.mark.parametrize("flags, message", [(["--port", "99999"], "argument --port: 99999 is more than 65535"),
                                            (["--port", "-1"], "argument --port: -1 is less than 0"),
                                            (["--max-tokens", "0"], "argument --max-tokens: 0 is less than 1"),
                                            (["--max-kbest", "x"], "argument --max-kbest: 'x' is not an integer"),
                                            (["--max-queue", "0"], "argument --max-queue: 0 is less than 1"),
                                            (["--max-chars", "0"], "argument --max-chars: 0 is less than 1"),
                                            (["--max-body-bytes", "64k"],
                                             "argument --max-body-bytes: '64k' is not an integer")])
def test_cky_serve_arguments_out_of_range_are_usage_errors(flags, message, capsys):
    """(--port 99999 was an OverflowError traceback from bind() after the model had loaded.)"""
    from decoder.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--config", "no-such.toml", *flags])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
