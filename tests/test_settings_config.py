"""Search settings and decoder configs: every value checked at construction, every mistake a
ConfigError (or SettingsError) naming the key and the file; the one loader; tuned configs that load
from where they are written; the Python API's argument checks."""
import os
import re

import pytest

from decoder.config import PATH_KEYS, load_config, parse_config, relocate_paths
from decoder.decoder import DEFAULT_SETTINGS, Decoder
from decoder.errors import ConfigError, SettingsError, StoreError
from decoder.settings import (DEFAULT_EXPERIMENTAL_SETTINGS, DEFAULT_SEARCH_SETTINGS, EXPERIMENTAL_NAMES,
                              SEARCH_ALGORITHMS, SETTING_NAMES, ExperimentalSettings, SearchSettings,
                              register_search_algorithm)

from test_decoder import model  # noqa: F401 (the toy model directory: store/, lm.arpa)


@pytest.fixture(scope="module")
def decoder(model):  # noqa: F811
    """The toy model with every setting and weight at its default."""
    return Decoder(model / "store", model / "lm.arpa")


def write(directory, text, name="config.toml"):
    path = directory / name
    path.write_text('store = "store"\nlm = "lm.arpa"\n' + text)
    return path


# ---- SearchSettings ------------------------------------------------------------------------------

BAD_SETTINGS = [
    ("pop_limit", 2.7), ("pop_limit", True), ("pop_limit", "abc"), ("pop_limit", -1), ("pop_limit", None),
    ("beam_size", -1), ("beam_size", 1.0),
    ("beam_threshold", -0.5), ("beam_threshold", float("nan")), ("beam_threshold", "0"), ("beam_threshold", False),
    ("max_span", 0), ("max_span", -3),
    ("max_unary_depth", -1),
    ("exhaustive", "false"), ("exhaustive", 1), ("exhaustive", None),
    ("search", "beam-me-up"), ("search", 1),
]


@pytest.mark.parametrize("key, value", BAD_SETTINGS)
def test_search_settings_reject_wrong_types_and_ranges(key, value):
    with pytest.raises(SettingsError, match=f"`{key}`"):
        SearchSettings(**{key: value})
    with pytest.raises(SettingsError, match=f"`{key}`"):
        DEFAULT_SEARCH_SETTINGS.replace(**{key: value})


def test_search_settings_accept_the_edges_of_their_ranges():
    settings = SearchSettings(pop_limit=0, beam_size=0, beam_threshold=0, max_span=1, max_unary_depth=0,
                              exhaustive=True, experimental=ExperimentalSettings(unary_pop_limit=-1))
    assert settings.beam_threshold == 0.0 and isinstance(settings.beam_threshold, float)
    assert settings.experimental.unary_pop_limit == -1
    with pytest.raises(SettingsError, match="pop_limt"):
        settings.replace(pop_limt=1)


def test_search_algorithm_registry():
    assert SearchSettings().search == "cube" and "cube" in SEARCH_ALGORITHMS
    with pytest.raises(SettingsError):
        SearchSettings(search="two-pass-test")
    register_search_algorithm("two-pass-test", "a test entry")
    try:
        assert SearchSettings(search="two-pass-test").search == "two-pass-test"
    finally:
        del SEARCH_ALGORITHMS["two-pass-test"]


def test_one_home_for_the_defaults(model, decoder):
    # the compiled search has none of its own: it runs with SearchSettings' values
    from decoder._ext._chart import ChartSearch

    engine = decoder.chart.engine
    defaults = SearchSettings()
    for name in ("pop_limit", "max_span", "max_unary_depth", "beam_size", "beam_threshold", "exhaustive"):
        assert getattr(engine, name) == getattr(defaults, name), name
    assert engine.unary_pop_limit == defaults.experimental.unary_pop_limit
    with pytest.raises(TypeError):
        ChartSearch(decoder.chart.grammar.arrays, decoder.lm, decoder.chart.grammar.n_symbols,
                    decoder.chart.grammar.goal_symbol)
    # the driver built without a Decoder runs the same search (the compiled side used to default to
    # unary depth 3 and unary pop limit -1)
    from decoder.search.driver import ChartSearchDriver

    driver = ChartSearchDriver(decoder.store, decoder.lm, decoder.weights)
    assert driver.engine.unary_pop_limit == defaults.experimental.unary_pop_limit
    assert driver.engine.max_unary_depth == defaults.max_unary_depth
    assert {k: DEFAULT_SETTINGS[k] for k in SETTING_NAMES + EXPERIMENTAL_NAMES} == defaults.as_dict()
    assert decoder.settings["search"] == "cube"


def test_reconfigure_changes_the_search_and_checks_values(model):
    decoder = Decoder(model / "store", model / "lm.arpa")
    decoder.reconfigure(pop_limit=3, beam_size=2)
    assert decoder.chart.engine.pop_limit == 3 and decoder.chart.engine.beam_size == 2
    assert decoder.settings["pop_limit"] == 3 and decoder.search_settings.beam_size == 2
    with pytest.raises(SettingsError, match="pop_limit"):
        decoder.reconfigure(pop_limit=-1)
    assert decoder.chart.engine.pop_limit == 3


def test_edge_kinds_are_the_compiled_ones():
    from decoder._ext._chart import EdgeKind
    from decoder.search import readback

    assert (readback.EDGE_OOV, readback.EDGE_GLUE_START, readback.EDGE_GLUE_CONCAT) == \
        (EdgeKind.EDGE_OOV, EdgeKind.EDGE_GLUE_START, EdgeKind.EDGE_GLUE_CONCAT)


# ---- configs ---------------------------------------------------------------------------------------

BAD_CONFIGS = [
    ("pop_limt = 1\n", "pop_limt"),
    ("[search]\npop_limt = 1\n", "search.pop_limt"),
    ('exhaustive = "false"\n', "exhaustive"),
    ("pop_limit = 2.7\n", "pop_limit"),
    ('pop_limit = "abc"\n', "pop_limit"),
    ("pop_limit = -1\n", "pop_limit"),
    ("max_span = 0\n", "max_span"),
    ("max_span = -2\n", "max_span"),
    ("oov_labels = []\n", "oov_labels"),
    ("oov_labels = [1]\n", "oov_labels"),
    ("max_unary_depth = -1\n", "max_unary_depth"),
    ("beam_size = -1\n", "beam_size"),
    ("[experimental]\nunary_pop_limit = -5\n", "unary_pop_limit"),
    ('[experimental]\npop_count = "some"\n', "pop_count"),
    ("[experimental]\nweight_pushing = 1\n", "weight_pushing"),
    ("[experimental]\npop_cont = 1\n", "experimental.pop_cont"),
    ("[experimental]\npop_limit = 1\n", "experimental.pop_limit"),
    ("[experimental.more]\nrule_order = 1\n", "experimental.more"),
    ("[search.experimental]\nrule_order = \"score\"\n", "search.experimental"),
    ("experimental = 3\n", "experimental"),
    ("[experimental]\nrule_lookahead = 0.5\n", "experimental.rule_lookahead"),
    ("pop_threshold = 2.0\n", "pop_threshold"),
    ('rule_order = "score"\n[experimental]\nrule_order = "estimate"\n', "rule_order"),
    ("beam_threshold = -1.0\n", "beam_threshold"),
    ("glue = 3\n", "glue"),
    ("lm_order = 2.0\n", "lm_order"),
    ("oov_penalty = \"high\"\n", "oov_penalty"),
    ("allow_unknown_weights = 1\n", "allow_unknown_weights"),
    ("[weights]\nlm = true\n", "weights.lm"),
    ("[weights]\nlm = [1.0]\n", "weights.lm"),
    ('[weights]\nlm = "1.0"\n', "weights.lm"),
    ("weights = 3\n", "weights"),
    ("[search]\nmax_span = 3\n[model]\nmax_span = 4\n", "max_span"),
    ("[model.weights]\nlm = 1.0\n", "model.weights"),
]


@pytest.mark.parametrize("text, key", BAD_CONFIGS)
def test_config_mistakes_name_the_key_and_the_file(tmp_path, text, key):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.path == str(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and f"`{key}" in message


@pytest.mark.parametrize("text, message", [('store = 42\nlm = "lm.arpa"\n', "`store` must be a path"),
                                           ('store = "store"\n', "needs `lm"),
                                           ("store = \n", "not valid TOML"),
                                           ('store = "s"\nlm = "l"\npop_limt = 1\n', "did you mean `pop_limit`")])
def test_whole_file_mistakes_name_the_file(tmp_path, text, message):
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(path)
    assert caught.value.path == str(path)


def test_a_missing_config_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read") as caught:
        load_config(tmp_path / "missing.toml")
    assert caught.value.path == str(tmp_path / "missing.toml")


@pytest.mark.parametrize("key, value, reason", [
    ("lm", "missing.arpa", "missing.arpa: language model file not found"),
    ("lm", "not_a_model.txt", "cannot load language model"),
    ("store", "missing-store", "missing-store: no grammar store here"),
])
def test_a_model_file_that_a_config_names_wrongly_is_an_error_naming_the_key_and_the_config(
        tmp_path, model, key, value, reason):
    (tmp_path / "not_a_model.txt").write_text("not an ARPA file\n")
    paths = {"store": str(model / "store"), "lm": str(model / "lm.arpa"), key: str(tmp_path / value)}
    path = tmp_path / "config.toml"
    path.write_text("".join(f'{name} = "{where}"\n' for name, where in paths.items()))
    with pytest.raises(ConfigError, match=f"^{re.escape(str(path))}: `{key}`: .*{re.escape(reason)}") as caught:
        Decoder.from_config(path)
    assert caught.value.path == str(path)
    # Given in Python (no config), the file's own error stands.
    with pytest.raises((OSError, ValueError, StoreError)) as plain:
        Decoder(paths["store"], paths["lm"])
    assert not isinstance(plain.value, ConfigError) and reason.split(": ")[-1] in str(plain.value)


def test_load_config_resolves_paths_against_its_directory(tmp_path, model):
    (tmp_path / "labels.txt").write_text("NN 0.5\nJJ 0.5\n")
    path = write(tmp_path, 'glue = "builtin"\noov_labels = "labels.txt"\n[search]\npop_limit = 7\n'
                           '[weights]\nlm = 2\n')
    config = load_config(path)
    assert config.store == str(tmp_path / "store") and config.lm == str(tmp_path / "lm.arpa")
    assert config.glue == "builtin" and config.oov_labels == str(tmp_path / "labels.txt")
    assert config.settings.pop_limit == 7 and config.weights == {"lm": 2.0}
    assert parse_config({"store": "s", "lm": "l", "oov_labels": "X"}, base_dir=tmp_path).oov_labels == "X"
    assert set(PATH_KEYS) == {"store", "lm", "glue", "oov_labels", "recase_model"}


def test_unknown_weight_is_an_error_naming_it_and_the_file_unless_allowed(model):
    path = write(model, "[weights]\nlmm = 1.13\n", name="typo.toml")
    with pytest.raises(ConfigError, match="`lmm`") as caught:
        Decoder.from_config(path)
    assert caught.value.path == str(path)
    with pytest.raises(SettingsError, match="`lmm`"):
        Decoder(model / "store", model / "lm.arpa", {"lmm": 1.0})
    allowed = write(model, "allow_unknown_weights = true\n[weights]\nlmm = 1.13\n", name="allowed.toml")
    decoder = Decoder.from_config(allowed)
    assert decoder.weights["lm"] == 1.0 and decoder.weights.unused == {"lmm": 1.13}
    assert Decoder(model / "store", model / "lm.arpa", {"lmm": 1.0}, allow_unknown_weights=True)


@pytest.mark.parametrize("keywords", [dict(pop_limit=2.7), dict(max_span=0), dict(exhaustive="false"),
                                      dict(oov_labels=[]), dict(weights={"lm": True}), dict(weights={"lm": [1]}),
                                      dict(lm_order=2.5), dict(oov_penalty="x")])
def test_decoder_keywords_are_checked(model, keywords):
    with pytest.raises(SettingsError):
        Decoder(model / "store", model / "lm.arpa", **keywords)


def test_empty_oov_label_file_is_an_error(model, tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("\n")
    with pytest.raises(ConfigError, match="no labels"):
        Decoder(model / "store", model / "lm.arpa", oov_labels=str(labels))


def test_from_mapping_equals_from_config(model):
    text = "pop_limit = 20\n[weights]\nlm = 0.8\nword_count = 0.2\n"
    from_file = Decoder.from_config(write(model, text, name="mapping.toml"))
    mapping = {"store": "store", "lm": "lm.arpa", "pop_limit": 20, "weights": {"lm": 0.8, "word_count": 0.2}}
    from_mapping = Decoder.from_mapping(mapping, base_dir=model)
    assert from_mapping.settings == from_file.settings
    sentence = "la casa verde es pequeña"
    assert from_mapping.translate(sentence).score == pytest.approx(from_file.translate(sentence).score)
    with pytest.raises(ConfigError, match="somewhere.toml"):
        Decoder.from_mapping(dict(mapping, pop_limt=1), base_dir=model, source="somewhere.toml")
    with pytest.raises(SettingsError, match="pop_limt"):
        Decoder.from_mapping(mapping, base_dir=model, pop_limt=1)


def test_relocate_paths_keeps_configs_loadable_elsewhere(tmp_path):
    config = {"store": "store", "lm": "/abs/lm.bin", "glue": "builtin", "oov_labels": "X",
              "search": {"pop_limit": 3}, "weights": {"lm": 1.0}}
    moved = relocate_paths(config, str(tmp_path / "a"), str(tmp_path / "b" / "c"))
    assert moved["store"] == os.path.join("..", "..", "a", "store")
    assert moved["lm"] == "/abs/lm.bin" and moved["glue"] == "builtin" and moved["oov_labels"] == "X"
    assert relocate_paths(config, str(tmp_path), str(tmp_path)) == config
    assert relocate_paths(config, str(tmp_path))["store"] == str(tmp_path / "store")


def test_cky_tune_out_in_another_directory_writes_a_config_that_loads(model, tmp_path):
    from decoder.cli import main

    config = write(model, "pop_limit = 20\n[weights]\nlm = 1.0\n", name="tune-me.toml")
    (tmp_path / "dev.src").write_text("la casa verde es pequeña\nel perro es pequeña\n")
    (tmp_path / "dev.ref").write_text("the green house is small\nthe dog is small\n")
    out = tmp_path / "elsewhere" / "deeper" / "tuned.toml"
    out.parent.mkdir(parents=True)
    assert main(["tune", "--config", str(config), "--dev-src", str(tmp_path / "dev.src"), "--dev-ref",
                 str(tmp_path / "dev.ref"), "--out", str(out), "--kbest", "3", "--max-iterations", "1",
                 "--restarts", "1", "--tokenize", "none", "--quiet"]) == 0
    written = load_config(out)
    assert os.path.samefile(written.store, model / "store") and os.path.samefile(written.lm, model / "lm.arpa")
    tuned = Decoder.from_config(out)
    assert tuned.translate("la casa").text


# ---- the Python API ----------------------------------------------------------------------------------

@pytest.mark.parametrize("sentence, message", [(b"la casa", "not bytes: decode it first"),
                                               (bytearray(b"la"), "not bytes: decode it first"),
                                               (None, "not NoneType"), (42, "not int"),
                                               (["la", 3], "str tokens, not int"),
                                               (["la", b"casa"], "str tokens, not bytes")])
def test_translate_rejects_what_is_not_text(decoder, sentence, message):
    with pytest.raises(TypeError, match=message):
        decoder.translate(sentence)
    with pytest.raises(TypeError, match=message):
        decoder.kbest(sentence, 2)


def test_translate_batch_rejects_a_string(decoder):
    for sentences in ("la casa", b"la casa", None, ["la casa", None]):
        with pytest.raises(TypeError):
            decoder.translate_batch(sentences)
    assert [t.text for t in decoder.translate_batch(["la casa", ["el", "perro"]])] == ["the house", "the dog"]


@pytest.mark.parametrize("sentence", ["la casa", "", ["la", "casa"]])
@pytest.mark.parametrize("k", [0, -1])
def test_kbest_needs_k_at_least_one(decoder, sentence, k):
    with pytest.raises(ValueError, match="at least 1"):
        decoder.kbest(sentence, k)


def test_kbest_k_must_be_an_integer(decoder):
    for k in (1.5, "3", True):
        with pytest.raises(TypeError):
            decoder.kbest("la casa", k)


def test_a_list_of_tokens_is_a_sentence(decoder):
    assert decoder.translate(["la", "casa"]).text == decoder.translate("la casa").text == "the house"
    assert decoder.translate(("el", "perro")).text == "the dog"
    assert len(decoder.kbest(["la", "casa"], 2)) == 2


def test_cky_tune_names_the_config_file_of_a_mistake(model, tmp_path, capsys):
    from decoder.cli import main

    config = write(model, "pop_limt = 20\n", name="tune-typo.toml")
    (tmp_path / "dev.src").write_text("la casa\n")
    (tmp_path / "dev.ref").write_text("the house\n")
    assert main(["tune", "--config", str(config), "--dev-src", str(tmp_path / "dev.src"), "--dev-ref",
                 str(tmp_path / "dev.ref"), "--out", str(tmp_path / "out.toml"), "--quiet"]) == 1
    message = capsys.readouterr().err.strip()
    assert message.startswith(f"cky tune: {config}: ") and "`pop_limt`" in message and "\n" not in message


def test_search_names_an_algorithm_with_a_driver(model):
    register_search_algorithm("no-driver-test", "registered, but nothing implements it")
    try:
        with pytest.raises(SettingsError, match="no-driver-test"):
            Decoder(model / "store", model / "lm.arpa", search="no-driver-test")
    finally:
        del SEARCH_ALGORITHMS["no-driver-test"]


# ---- the [experimental] table ----------------------------------------------------------------------

def test_public_settings_are_the_users_and_the_research_knobs_are_experimental():
    # (memory_budget_mb: the engine's memory budget, public too)
    assert set(SETTING_NAMES) - {"memory_budget_mb"} == {
        "search", "pop_limit", "beam_size", "beam_threshold", "max_span", "max_unary_depth", "exhaustive",
        "table_limit", "two_pass_beam", "agenda_limit", "max_pops", "kbest_per_class"}
    assert set(EXPERIMENTAL_NAMES) == {"pop_count", "virtual_pop_limit", "unary_pop_limit", "table_limit_rank",
                                       "rule_order", "weight_pushing", "edge_limit", "first_pass_items",
                                       "first_pass_threshold", "second_pass_stop"}
    for removed in ("rule_lookahead", "pop_threshold"):
        assert removed not in SETTING_NAMES + EXPERIMENTAL_NAMES
        with pytest.raises(SettingsError, match=removed):
            DEFAULT_SEARCH_SETTINGS.replace(**{removed: 0.0})


def test_experimental_settings_are_checked_like_the_others():
    with pytest.raises(SettingsError, match="`virtual_pop_limit`"):
        ExperimentalSettings(virtual_pop_limit=-1)
    with pytest.raises(SettingsError, match="unknown experimental setting `pop_cont`"):
        DEFAULT_EXPERIMENTAL_SETTINGS.replace(pop_cont=1)
    with pytest.raises(SettingsError, match="`rule_order`"):
        DEFAULT_SEARCH_SETTINGS.replace(experimental={"rule_order": "best"})
    # given by its own name, an experimental setting changes the experimental table
    changed = DEFAULT_SEARCH_SETTINGS.replace(rule_order="score", pop_limit=7)
    assert changed.experimental.rule_order == "score" and changed.pop_limit == 7
    assert changed.experimental.changed() == {"rule_order": "score"}
    assert SearchSettings.from_mapping(changed.as_dict()) == changed
    with pytest.raises(SettingsError, match="pop_count.*not of search = 'two-pass'"):
        SearchSettings(search="two-pass", experimental={"pop_count": "real"})


def test_experimental_table_loads_and_reaches_the_settings(tmp_path):
    path = write(tmp_path, '[search]\npop_limit = 30\n[experimental]\npop_count = "real"\nvirtual_pop_limit = 50\n'
                           'weight_pushing = false\n')
    config = load_config(path)
    assert config.settings.pop_limit == 30
    assert config.settings.experimental == ExperimentalSettings(pop_count="real", virtual_pop_limit=50,
                                                                weight_pushing=False)


def test_unknown_experimental_key_names_the_key_and_the_file(tmp_path):
    path = write(tmp_path, "[experimental]\nvirtual_pop_limt = 50\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.path == str(path)
    assert str(caught.value).startswith(f"{path}: unknown key `experimental.virtual_pop_limt`")
    assert "did you mean `virtual_pop_limit`" in str(caught.value)


def test_old_configs_with_experimental_keys_beside_the_others_load_with_a_warning(tmp_path):
    """Configs written before the [experimental] table: the same settings, and a warning naming the key,
    the file and the table to move it to; a removed setting at its old default (off) is dropped with a
    warning."""
    path = write(tmp_path, '[search]\npop_limit = 30\nrule_order = "score"\nrule_lookahead = 0.0\n')
    with pytest.warns(FutureWarning) as warned:
        config = load_config(path)
    messages = [str(w.message) for w in warned]
    assert any(str(path) in m and "`search.rule_order`" in m and "[experimental]" in m for m in messages)
    assert any("`search.rule_lookahead` was removed" in m for m in messages)
    assert config.settings.experimental.rule_order == "score" and config.settings.pop_limit == 30
    new = write(tmp_path, '[search]\npop_limit = 30\n[experimental]\nrule_order = "score"\n', "new.toml")
    assert load_config(new).settings == config.settings


def test_experimental_table_belongs_to_the_ghkm_system(tmp_path):
    path = tmp_path / "sdig.toml"
    path.write_text('system = "sdig"\ngrammar = "g"\n[experimental]\nrule_order = "score"\n')
    with pytest.raises(ConfigError, match="experimental") as caught:
        load_config(path)
    assert caught.value.path == str(path)


def test_decoder_takes_experimental_settings(model):
    decoder = Decoder(model / "store", model / "lm.arpa", experimental={"unary_pop_limit": 3}, weight_pushing=False)
    assert decoder.search_settings.experimental.unary_pop_limit == 3
    assert decoder.search_settings.experimental.weight_pushing is False
    assert decoder.chart.engine.unary_pop_limit == 3
    assert decoder.settings["unary_pop_limit"] == 3  # (the flat view of every setting)
    decoder.reconfigure(experimental={"unary_pop_limit": -1})
    assert decoder.chart.engine.unary_pop_limit == -1
    assert decoder.search_settings.experimental.weight_pushing is False  # (the others kept)
    with pytest.raises(SettingsError, match="pop_cont"):
        Decoder(model / "store", model / "lm.arpa", experimental={"pop_cont": 1})


def test_compiled_engines_take_settings_only_through_their_constructor_or_configure(decoder):
    """No setting of a compiled search can be set by assigning an attribute."""
    engine = decoder.chart.engine
    for name in ("pop_limit", "beam_size", "unary_pop_limit", "pop_count_real", "virtual_pop_limit",
                 "round_score_beam"):
        with pytest.raises(AttributeError):
            setattr(engine, name, getattr(engine, name))


def test_derived_configs_put_an_added_experimental_setting_in_its_table(tmp_path):
    """Tuning and the benchmarks derive configs (decoder.tune.config.with_settings): an experimental setting
    they add goes to [experimental], so the config loads without a warning."""
    import warnings

    from decoder.tune.config import with_settings, write_config

    derived = with_settings({"store": "store", "lm": "lm.arpa", "search": {"pop_limit": 3}}, None,
                            rule_order="score", pop_limit=5)
    path = tmp_path / "derived.toml"
    write_config(derived, str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = load_config(path)
    assert loaded.settings.pop_limit == 5 and loaded.settings.experimental.rule_order == "score"
