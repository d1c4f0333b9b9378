"""OSIS stripping, IMP parsing, verse pairing and shifted-chapter detection on tiny fixtures."""
import pytest

from decoder.data import bible

ENGLISH_IMP = """$$$[ Module Heading ]
$$$Genesis 0:0
<title level="1" type="main">Genesis</title>
$$$Genesis 1:0
<chapter n="1" osisID="Gen.1" sID="Gen.1"/>
$$$Genesis 1:1
<w lemma="strong:H0430">In</w> <w lemma="strong:H7225">the beginning</w>, <w lemma="strong:H0430">God</w><note placement="foot"><reference type="annotateRef">1:1 </reference>The Hebrew word rendered “God” is “Elohim”.</note><w lemma="strong:H1254">created</w> <w>the heavens</w>.
$$$Genesis 1:2
<div type="x-milestone" subType="x-preverse" sID="pv1"/><div sID="gen26" type="x-p"/><title>A heading</title><w>The</w> <w>earth</w> <w>was</w> <l level="1" sID="l1"/>form<transChange type="added">less</transChange>.<l eID="l1" level="1"/><l level="1" sID="l2"/>Darkness<l eID="l2" level="1"/>
$$$Psalms 3:1
<title canonical="true" type="psalm">A Psalm by David.</title> <lg sID="g1"/><l level="1" sID="l3"/>Yahweh, how many!<l eID="l3" level="1"/> <speaker>Beloved</speaker>Selah.
"""

SPANISH_IMP = """$$$[ Module Heading ]
$$$Genesis 1:1
<w lemma="strong:H7225">EN el principio</w> <w lemma="strong:H1254">crió</w> <w>Dios</w> los cielos.
$$$Genesis 1:2
Y la tierra estaba desordenada.
$$$Exodus 1:1
Estos son los nombres.
"""


def test_glued_footnote_leaves_a_space():
    text = bible.strip_osis('<w>God</w><note placement="foot"><reference>1:1 </reference>A note.</note><w>created</w>')
    assert text == "God created"


def test_strip_markup_of_verses():
    verses = {v.reference: v.text for v in bible.read_verses(ENGLISH_IMP, "en.imp")}
    assert verses["Genesis 1:1"] == "In the beginning, God created the heavens."
    # non-canonical title dropped, inline <transChange> glued, <l> breaks are spaces
    assert verses["Genesis 1:2"] == "The earth was formless. Darkness"
    # canonical psalm title kept, speaker label dropped
    assert verses["Psalms 3:1"] == "A Psalm by David. Yahweh, how many! Selah."
    assert "Genesis 0:0" not in verses and "Genesis 1:0" not in verses


def test_entities_and_nested_notes():
    markup = 'a &amp; b<note>x <note>y</note> z</note>c'
    assert bible.strip_osis(markup) == "a & b c"


def test_malformed_header_names_file_and_line():
    with pytest.raises(ValueError, match=r"bad\.imp:2: malformed IMP header"):
        bible.parse_imp("$$$Genesis 1:1\n$$$Genesis one\n", "bad.imp")
    with pytest.raises(ValueError, match=r"bad\.imp:1: text before"):
        bible.parse_imp("text\n$$$Genesis 1:1\n", "bad.imp")
    with pytest.raises(ValueError, match=r"bad\.imp:3: verse 'Genesis 1:1' appears twice"):
        bible.parse_imp("$$$Genesis 1:1\na\n$$$Genesis 1:1\nb\n", "bad.imp")


def test_pair_verses_by_reference():
    english = bible.read_verses(ENGLISH_IMP, "en.imp")
    spanish = bible.read_verses(SPANISH_IMP, "es.imp")
    pairs = bible.pair_verses(spanish, english)
    assert [(es.reference, en.reference) for es, en in pairs] == [
        ("Genesis 1:1", "Genesis 1:1"), ("Genesis 1:2", "Genesis 1:2")]
    assert pairs[0][0].text == "EN el principio crió Dios los cielos."


def _chapter(book, chapter, lengths):
    return [bible.Verse(book, chapter, v, "x" * n) for v, n in enumerate(lengths, start=1)]


def test_shift_detection_on_a_synthetic_shifted_chapter():
    lengths = [40, 120, 75, 200, 60, 150, 90, 30, 170, 110, 55, 140, 80, 190, 65, 125]
    english = _chapter("Numbers", 13, lengths) + _chapter("Numbers", 14, lengths)
    # Spanish chapter 13 has one more verse at the start: its verse v is English verse v-1;
    # chapter 14 is numbered the same (lengths scaled by a translation factor)
    spanish = (_chapter("Numbers", 13, [int(1.1 * n) for n in [100] + lengths])
               + _chapter("Numbers", 14, [int(1.1 * n) for n in lengths]))
    shifted = bible.detect_shifted_chapters(spanish, english)
    assert list(shifted) == [("Numbers", 13)]
    assert shifted[("Numbers", 13)]["offset"] == -1


def test_short_chapters_are_not_judged_on_chance():
    english = _chapter("Psalms", 150, [40, 60, 55, 70, 52, 45])
    spanish = _chapter("Psalms", 150, [60, 55, 70, 52, 45, 40])
    assert bible.detect_shifted_chapters(spanish, english) == {}


def test_length_ratio_filter():
    assert bible.plausible_length_ratio(20, 25)
    assert not bible.plausible_length_ratio(10, 60)
    assert not bible.plausible_length_ratio(0, 5)
    assert bible.plausible_length_ratio(1, 3)      # short verses judged with slack
