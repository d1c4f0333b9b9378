"""The recasing model (decoder.recase): training counts, the choice of forms, recasing worked
examples computed by hand from a small corpus, and the file format."""
import gzip
import os

import pytest

from decoder.errors import ModelError
from decoder.recase import FORMAT_VERSION, RecaseModel, best_form, sentence_starts

# Cased, tokenized training sentences. Counted (not at a sentence start), by hand:
#   i: I x3; my: my x4; lord: lord x4 (all after "my"), LORD x5 (all after "the"); moses: Moses x1;
#   the: the x7 (line 7's first "The" and the "The" after `: "` in line 6 are sentence starts);
#   praise: praise x1 (the two capitalized ones start sentences); and: and x2; man: man x3.
#   Never counted (only at sentence starts): then, he, we, they.
CORPUS = [
    "Then I said to my lord Moses .",
    "He saw my lord .",
    "We praise the LORD and my lord .",
    "They feared the LORD ; and I spoke to my lord .",
    "Praise the LORD ! Praise the LORD .",
    'He said : " The man is here . " Then I went .',
    "The man saw the dog ; the LORD saw the man .",
]
SENTENCES = [line.split() for line in CORPUS]


@pytest.fixture(scope="module")
def model():
    return RecaseModel.train(SENTENCES)


def test_counts_skip_sentence_starts(model):
    assert model.unigrams["i"] == {"I": 3}
    assert model.unigrams["lord"] == {"lord": 4, "LORD": 5}
    assert model.unigrams["the"] == {"the": 7}
    assert model.unigrams["praise"] == {"praise": 1}
    for word in ("then", "he", "we", "they"):
        assert word not in model.unigrams
    # the context table keeps only what overrides the unigram choice (LORD): "lord" after "my"
    assert model.bigrams == {("my", "lord"): {"lord": 4}}


def test_sentence_starts():
    tokens = 'he said : " the man . " then -LRB- i went -RRB- ! \' so , " go " now . -LRB- see it -RRB-'.split()
    starts = sentence_starts(tokens)
    assert [t for t, s in zip(tokens, starts) if s] == ["he", "the", "then", "so", "go", "see"]
    assert sentence_starts([]) == []


def test_recase_worked_example(model):
    tokens = 'then i said to moses : my lord , the man saw the lord . we praise the lord . he said , " praise the lord ! "'
    assert " ".join(model.recase(tokens.split())) == (
        'Then I said to Moses : my lord , the man saw the LORD . We praise the LORD . He said , " Praise the LORD ! "')


def test_context_table_decides_where_confident():
    with_context = RecaseModel.train(SENTENCES)
    without = RecaseModel.train(SENTENCES, bigrams=False)
    assert with_context.recase("to my lord and the lord".split()) == "To my lord and the LORD".split()
    assert without.recase("to my lord and the lord".split()) == "To my LORD and the LORD".split()
    # too few occurrences of the context, or too mixed: the unigram choice stands
    assert RecaseModel.train(SENTENCES, bigram_min_count=5).bigrams == {}
    mixed = SENTENCES + [["So", "my", "LORD", "."]]  # "my": lord x4, LORD x1 = 0.8 of 5
    assert RecaseModel.train(mixed, bigram_min_share=0.8).bigrams == {("my", "lord"): {"lord": 4, "LORD": 1}}
    assert RecaseModel.train(mixed, bigram_min_share=0.81).bigrams == {}


def test_ties():
    assert best_form({"LORD": 2, "lord": 2}) == "lord"        # lowercase when it ties
    assert best_form({"LORD": 2, "Lord": 2}) == "Lord"        # else fewest capitals
    assert best_form({"McX": 1, "MCx": 1}) == "MCx"           # then code-point order
    assert best_form({"LORD": 3, "lord": 2}) == "LORD"
    # the order of the training text does not matter
    tied = [["so", "the", "Word"], ["so", "the", "word"]]
    assert RecaseModel.train(tied).recase(["the", "word"]) == ["The", "word"]
    assert RecaseModel.train(tied[::-1]).recase(["the", "word"]) == ["The", "word"]


def test_hints_for_unknown_words_only(model):
    tokens = ["moses", "saw", "ximénez", "and", "pérez"]
    hints = ["MOSES", "Saw", "Ximénez", None, "Smith"]
    # known words follow the model; an unknown word takes its hint if the hint is a casing of it
    assert model.recase(tokens, hints) == ["Moses", "saw", "Ximénez", "and", "pérez"]
    assert model.recase(tokens) == ["Moses", "saw", "ximénez", "and", "pérez"]
    with pytest.raises(ValueError, match="2 hints for 5 tokens"):
        model.recase(tokens, hints[:2])


def test_empty_model_capitalizes_sentence_starts_only():
    tokens = 'the man said : " i went . " and god saw it ! yes'.split()
    assert RecaseModel().recase(tokens) == 'The man said : " I went . " And god saw it ! Yes'.split()
    assert len(RecaseModel()) == 0 and RecaseModel().recase([]) == []
    assert RecaseModel.train([]) == RecaseModel()


def test_train_rejects_untokenized_text(tmp_path):
    with pytest.raises(TypeError, match="sentence 2 is a string"):
        RecaseModel.train([["A"], "A raw line"])
    with pytest.raises(ValueError, match="cannot be saved"):
        RecaseModel.train([["a", "B\tC"]]).save(tmp_path / "m.tsv")
    assert not (tmp_path / "m.tsv").exists()


@pytest.mark.parametrize("name", ["recase.tsv", "recase.tsv.gz"])
def test_save_load_round_trip(model, tmp_path, name):
    path = tmp_path / name
    model.save(path)
    assert sorted(os.listdir(tmp_path)) == [name]  # no temporary file left
    data = path.read_bytes()
    assert (data[:2] == b"\x1f\x8b") == name.endswith(".gz")
    if name.endswith(".gz"):
        assert data[4:8] == bytes(4)  # no time stamp in the gzip header: the same model, the same bytes
    text = gzip.decompress(data) if name.endswith(".gz") else data
    assert text.decode("utf-8").splitlines()[0] == f"cky-recase\t{FORMAT_VERSION}"
    loaded = RecaseModel.load(path)
    assert loaded == model
    assert loaded.bigram_min_count == model.bigram_min_count and loaded.bigram_min_share == model.bigram_min_share
    tokens = "then i said to my lord and the lord".split()
    assert loaded.recase(tokens) == model.recase(tokens)
    # the same data gives the same bytes (the gzip header has no time stamp)
    RecaseModel.train(SENTENCES).save(tmp_path / ("again" + name))
    assert (tmp_path / ("again" + name)).read_bytes() == data
    # save replaces an existing file
    RecaseModel().save(path)
    assert RecaseModel.load(path) == RecaseModel()


def test_empty_model_round_trip(tmp_path):
    RecaseModel().save(tmp_path / "m.tsv")
    assert (tmp_path / "m.tsv").read_text() == (
        f"cky-recase\t{FORMAT_VERSION}\nsetting\tbigram_min_count\t3\nsetting\tbigram_min_share\t0.8\n")
    assert RecaseModel.load(tmp_path / "m.tsv") == RecaseModel()


GOOD = ["cky-recase\t1", "setting\tbigram_min_count\t3", "unigram\tlord\tLORD\t5", "unigram\tlord\tlord\t4",
        "bigram\tmy\tlord\tlord\t4"]


@pytest.mark.parametrize("line_number, bad_line, message", [
    (1, "cky-recase\t2", "format version '2'"),
    (1, "unigram\tlord\tLORD\t5", "not a recasing model"),
    (2, "setting\tbigram_min_count\tthree", "not a number"),
    (2, "setting\tcolour\t3", "NAME one of"),
    (3, "unigram\tlord\tLORD", "expected 'unigram"),
    (3, "unigram\tlord\tLORD\t5\t6", "expected 'unigram"),
    (3, "trigram\ta\tlord\tLORD\t5", "expected 'unigram"),
    (3, "unigram\tlord\tLord\tfive", "not a positive integer"),
    (3, "unigram\tlord\tLord\t0", "not a positive integer"),
    (3, "unigram\tlord\tLord\t²", "not a positive integer"),
    (3, "unigram\tlord\tGod\t5", "not a casing of 'lord'"),
    (3, "unigram\tlord\t\t5", "empty field"),
    (4, "unigram\tlord\tLORD\t2", "repeated"),
    (5, "bigram\tmy\tlord\tlord", "expected 'unigram"),
    (3, "", "empty line inside"),
])
def test_malformed_line_names_file_and_line(tmp_path, line_number, bad_line, message):
    lines = list(GOOD)
    lines[line_number - 1] = bad_line
    for name, write in [("m.tsv", lambda p, b: p.write_bytes(b)),
                        ("m.tsv.gz", lambda p, b: p.write_bytes(gzip.compress(b)))]:
        path = tmp_path / name
        write(path, ("\n".join(lines) + "\n").encode("utf-8"))
        with pytest.raises(ModelError, match=message) as error:
            RecaseModel.load(path)
        assert str(error.value).startswith(f"{path}:{line_number}: ")


def test_good_lines_load(tmp_path):
    path = tmp_path / "m.tsv"
    path.write_text("\n".join(GOOD) + "\n")
    model = RecaseModel.load(path)
    assert model.unigrams == {"lord": {"LORD": 5, "lord": 4}} and model.bigrams == {("my", "lord"): {"lord": 4}}
    assert model.recase("the lord of my lord".split()) == "The LORD of my lord".split()


def test_unreadable_files(tmp_path):
    with pytest.raises(ModelError, match="cannot read the recasing model") as error:
        RecaseModel.load(tmp_path / "missing.tsv")
    assert str(error.value).startswith(str(tmp_path / "missing.tsv"))
    (tmp_path / "empty.tsv").write_bytes(b"")
    with pytest.raises(ModelError, match="empty file"):
        RecaseModel.load(tmp_path / "empty.tsv")
    (tmp_path / "bad.tsv").write_bytes("cky-recase\t1\nunigram\tx\tX\t1\n".encode() + b"unigram\t\xff\t\xff\t1\n")
    with pytest.raises(ModelError, match=r"bad\.tsv:3: not UTF-8"):
        RecaseModel.load(tmp_path / "bad.tsv")
    (tmp_path / "cut.tsv.gz").write_bytes(gzip.compress(b"cky-recase\t1\n" * 100)[:30])
    with pytest.raises(ModelError, match=r"cut\.tsv\.gz: cannot read"):
        RecaseModel.load(tmp_path / "cut.tsv.gz")
