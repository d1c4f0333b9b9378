"""The Bible corpus: SWORD dump, OSIS markup stripping, verse alignment, shift detection.

`mod2imp MODULE` (Debian libsword-utils) dumps a module as IMP text: a header
line `$$$Book C:V` followed by that verse's OSIS markup. We strip the markup
ourselves because SWORD's own filters glue words together where a footnote sat
("God<note>..</note><w>created" -> "Godcreated"): footnotes, non-canonical
titles and speaker labels are dropped with their content, every other element
that is not inline (Strong's `<w>`, `<transChange>`, `<q>`, ...) becomes a
space, canonical psalm titles are kept as text.

The Spanish module numbers some chapters differently (verse v in Spanish is
verse v+1 in English, say). `detect_shifted_chapters` finds them from the data
alone: within a chapter the verse lengths of a correctly aligned pair are
strongly correlated, and a shifted chapter correlates better at a nonzero
verse offset.
"""
from __future__ import annotations

import glob
import re
import subprocess
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

SPANISH_MODULE = "spaRV1909eb"
ENGLISH_MODULE = "engWEB2015eb"

HEADER_RE = re.compile(r"^\$\$\$(?P<book>.+) (?P<chapter>\d+):(?P<verse>\d+)\s*$")
TAG_RE = re.compile(r"<(?P<close>/?)(?P<name>[A-Za-z]+)(?P<attributes>[^>]*?)(?P<empty>/?)>")
# elements dropped together with their content
DROPPED_ELEMENTS = {"note", "speaker"}
# elements removed without a space: they wrap (parts of) words
INLINE_ELEMENTS = {"w", "transChange", "q", "seg", "name", "hi", "foreign", "divineName", "rdg", "catchWord"}
SPACE_RE = re.compile(r"\s+")
SPACE_BEFORE_PUNCTUATION_RE = re.compile(r"\s+([,.;:!?])")


@dataclass(frozen=True)
class Verse:
    """One verse of one module: its reference and its plain text."""
    book: str
    chapter: int
    verse: int
    text: str

    @property
    def reference(self) -> str:
        return f"{self.book} {self.chapter}:{self.verse}"


def dump_module(module: str) -> str:
    """The IMP dump of a SWORD module (runs `mod2imp`)."""
    result = subprocess.run(["mod2imp", module], capture_output=True, text=True)
    if result.returncode != 0 or "$$$" not in result.stdout:
        raise RuntimeError(f"mod2imp {module} failed (exit {result.returncode}): {result.stderr.strip()[:500]}")
    return result.stdout


def parse_imp(text: str, source: str) -> list[tuple[str, int, int, str]]:
    """(book, chapter, verse, markup) for each verse entry of an IMP dump, in order.

    Entries with chapter or verse 0 (book and chapter introductions) and the
    module/testament headings are skipped. `source` names the dump in errors.
    """
    entries: list[tuple[str, int, int, str]] = []
    current: tuple[str, int, int] | None = None
    lines: list[str] = []
    seen: set[tuple[str, int, int]] = set()

    def flush() -> None:
        if current is not None and current[1] > 0 and current[2] > 0:
            entries.append((*current, " ".join(lines)))

    for line_number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("$$$"):
            flush()
            lines = []
            if line.startswith("$$$["):          # module or testament heading
                current = ("", 0, 0)
                continue
            match = HEADER_RE.match(line)
            if match is None:
                raise ValueError(f"{source}:{line_number}: malformed IMP header {line!r} "
                                 "(expected '$$$Book chapter:verse')")
            current = (match["book"], int(match["chapter"]), int(match["verse"]))
            if current in seen:
                raise ValueError(f"{source}:{line_number}: verse {line[3:]!r} appears twice")
            seen.add(current)
        elif line.strip():
            if current is None:
                raise ValueError(f"{source}:{line_number}: text before the first '$$$' header")
            lines.append(line)
    flush()
    return entries


def strip_osis(markup: str) -> str:
    """Plain text of one verse's OSIS markup (see the module docstring)."""
    pieces: list[str] = []
    drop_stack: list[str] = []    # open elements whose content is dropped
    position = 0
    for match in TAG_RE.finditer(markup):
        if not drop_stack:
            pieces.append(markup[position:match.start()])
        position = match.end()
        name = match["name"]
        is_close, is_empty = bool(match["close"]), bool(match["empty"])
        dropped = name in DROPPED_ELEMENTS or (name == "title" and 'canonical="true"' not in match["attributes"])
        if dropped and not is_empty:
            if is_close:
                if drop_stack and drop_stack[-1] == name:
                    drop_stack.pop()
            else:
                drop_stack.append(name)
            pieces.append(" ")
            continue
        if drop_stack:
            continue
        if name not in INLINE_ELEMENTS:
            pieces.append(" ")
    if not drop_stack:
        pieces.append(markup[position:])
    text = "".join(pieces).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
    text = SPACE_RE.sub(" ", text).strip()
    return SPACE_BEFORE_PUNCTUATION_RE.sub(r"\1", text)


def read_verses(imp_text: str, source: str) -> list[Verse]:
    """Verses with stripped text (empty verses are kept, with empty text)."""
    return [Verse(book, chapter, verse, strip_osis(markup))
            for book, chapter, verse, markup in parse_imp(imp_text, source)]


def pair_verses(spanish: list[Verse], english: list[Verse]) -> list[tuple[Verse, Verse]]:
    """(Spanish, English) pairs of the verses whose reference is in both, in Spanish order."""
    english_by_reference = {(v.book, v.chapter, v.verse): v for v in english}
    return [(es, english_by_reference[(es.book, es.chapter, es.verse)])
            for es in spanish if (es.book, es.chapter, es.verse) in english_by_reference]


def _rank_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman correlation (Pearson on ranks): robust to a few huge verses."""
    if len(x) < 3:
        return float("nan")
    x_ranks, y_ranks = x.argsort().argsort().astype(float), y.argsort().argsort().astype(float)
    if x_ranks.std() == 0 or y_ranks.std() == 0:
        return float("nan")
    return float(np.corrcoef(x_ranks, y_ranks)[0, 1])


def chapter_offset_correlations(spanish_lengths: dict[int, int], english_lengths: dict[int, int],
                                max_offset: int = 2, min_common_verses: int = 8) -> dict[int, float]:
    """Rank correlation of Spanish verse v's length with English verse v+offset's, per offset.

    Nonzero offsets that leave fewer than `min_common_verses` verse pairs give
    NaN: on a handful of verses a high correlation is chance.
    """
    correlations = {}
    for offset in range(-max_offset, max_offset + 1):
        common = [v for v in spanish_lengths if v + offset in english_lengths]
        if offset != 0 and len(common) < min_common_verses:
            correlations[offset] = float("nan")
            continue
        x = np.array([spanish_lengths[v] for v in common], dtype=float)
        y = np.array([english_lengths[v + offset] for v in common], dtype=float)
        correlations[offset] = _rank_correlation(x, y)
    return correlations


@dataclass(frozen=True)
class ShiftRule:
    """When a chapter counts as numbered differently (see `detect_shifted_chapters`)."""
    max_offset: int = 2
    min_common_verses: int = 8             # verse pairs needed to judge a nonzero offset
    min_shifted_correlation: float = 0.5   # correlation needed at the better offset
    margin: float = 0.3                    # by how much it must beat offset 0
    min_verses_unaligned: int = 8          # chapters this long ...
    max_unaligned_correlation: float = 0.2  # ... are also dropped when offset 0 correlates this little


def detect_shifted_chapters(spanish: list[Verse], english: list[Verse],
                            rule: ShiftRule = ShiftRule()) -> dict[tuple[str, int], dict]:
    """(book, chapter) -> {"offset", "correlations"} for chapters numbered differently.

    Verse lengths (in characters, which needs no tokenizer) of correctly
    aligned verses correlate strongly. A chapter is shifted when some nonzero
    verse offset correlates well and clearly better than offset 0, or when a
    chapter of some length does not correlate at offset 0 at all (its
    numbering differs by more than `max_offset` or irregularly); then
    "offset" is None.
    """
    spanish_lengths: dict[tuple[str, int], dict[int, int]] = defaultdict(dict)
    english_lengths: dict[tuple[str, int], dict[int, int]] = defaultdict(dict)
    for verse in spanish:
        spanish_lengths[(verse.book, verse.chapter)][verse.verse] = len(verse.text)
    for verse in english:
        english_lengths[(verse.book, verse.chapter)][verse.verse] = len(verse.text)
    shifted = {}
    for chapter, lengths in spanish_lengths.items():
        if chapter not in english_lengths:
            continue
        correlations = chapter_offset_correlations(lengths, english_lengths[chapter], rule.max_offset,
                                                   rule.min_common_verses)
        at_zero = correlations[0]
        valid = [o for o in correlations if not np.isnan(correlations[o])]
        if not valid:
            continue
        best = max(valid, key=lambda o: correlations[o])
        at_zero_or_worst = -1.0 if np.isnan(at_zero) else at_zero
        rounded = {o: round(c, 3) for o, c in correlations.items() if not np.isnan(c)}
        if (best != 0 and correlations[best] >= rule.min_shifted_correlation
                and correlations[best] - at_zero_or_worst >= rule.margin):
            shifted[chapter] = {"offset": best, "correlations": rounded}
        elif len(lengths) >= rule.min_verses_unaligned and at_zero_or_worst < rule.max_unaligned_correlation:
            shifted[chapter] = {"offset": None, "correlations": rounded}
    return shifted


def plausible_length_ratio(spanish_tokens: int, english_tokens: int, max_ratio: float = 1.8,
                           slack: int = 3) -> bool:
    """False for pairs whose token counts are too different to be translations.

    `slack` is added to both counts so that very short verses are not judged
    on a ratio of tiny numbers.
    """
    if spanish_tokens == 0 or english_tokens == 0:
        return False
    ratio = (english_tokens + slack) / (spanish_tokens + slack)
    return 1 / max_ratio <= ratio <= max_ratio


def module_version(module: str) -> str:
    """The Version= line of a SWORD module's .conf file, or 'unknown'."""
    for path in glob.glob("/usr/share/sword/mods.d/*.conf"):
        with open(path, encoding="utf-8", errors="replace") as conf:
            text = conf.read()
        if f"[{module}]" in text:
            match = re.search(r"^Version=(.*)$", text, re.MULTILINE)
            return match.group(1).strip() if match else "unknown"
    return "unknown"
