"""grow-diag-final-and on hand-worked examples, and Pharaoh reading/writing."""
import sys

import pytest

from decoder.data.align import check_alignment, grow_diag_final_and, read_pharaoh, write_pharaoh


def test_intersection_grows_into_union_neighbours():
    # intersection {0-0, 1-1}; 1-2 neighbours 1-1 and English word 2 is unaligned -> added;
    # 2-2 then neighbours 1-1 diagonally and Spanish word 2 is unaligned -> added
    forward = {(0, 0), (1, 1), (1, 2)}
    reverse = {(0, 0), (1, 1), (2, 2)}
    assert grow_diag_final_and(forward, reverse) == {(0, 0), (1, 1), (1, 2), (2, 2)}


def test_no_growth_when_both_words_already_aligned():
    # 0-1 neighbours 0-0, but Spanish 0 and English 1 are both aligned already
    forward = {(0, 0), (1, 1), (0, 1)}
    reverse = {(0, 0), (1, 1)}
    assert grow_diag_final_and(forward, reverse) == {(0, 0), (1, 1)}


def test_final_and_adds_isolated_points_of_unaligned_words():
    # 2-3 and 3-2 neighbour nothing; their words are unaligned -> FINAL-AND adds both
    forward = {(0, 0), (2, 3)}
    reverse = {(0, 0), (3, 2)}
    assert grow_diag_final_and(forward, reverse) == {(0, 0), (2, 3), (3, 2)}


def test_final_and_needs_both_words_unaligned():
    # 2-0: Spanish 2 is unaligned but English 0 is aligned; plain FINAL would add it, FINAL-AND does not
    forward = {(0, 0), (2, 0)}
    reverse = {(0, 0)}
    assert grow_diag_final_and(forward, reverse) == {(0, 0)}


def test_final_and_forward_before_reverse():
    # forward 1-1 and reverse 1-2 compete for Spanish word 1 (isolated from the intersection):
    # the forward point comes first, then Spanish 1 is aligned and 1-2 is rejected
    forward = {(3, 3), (1, 1)}
    reverse = {(3, 3), (1, 2)}
    assert grow_diag_final_and(forward, reverse) == {(3, 3), (1, 1)}


def test_growth_continues_until_nothing_changes():
    # a diagonal chain only reachable step by step from 0-0
    forward = {(0, 0), (1, 1), (2, 2), (3, 3)}
    reverse = {(0, 0)}
    assert grow_diag_final_and(forward, reverse) == {(0, 0), (1, 1), (2, 2), (3, 3)}


def test_empty_alignments():
    assert grow_diag_final_and(set(), set()) == set()


def test_pharaoh_round_trip_and_errors():
    assert read_pharaoh("0-0 2-1 1-2") == {(0, 0), (2, 1), (1, 2)}
    assert write_pharaoh({(2, 1), (0, 0), (1, 2)}) == "0-0 1-2 2-1"
    assert read_pharaoh("") == set()
    with pytest.raises(ValueError, match=r"f\.align:7: bad alignment point '0:1'"):
        read_pharaoh("0-0 0:1", "f.align", 7)
    with pytest.raises(ValueError, match="outside 2x3"):
        check_alignment({(2, 0)}, 2, 3, "train Genesis 1:1")


FAKE_EFLOMAL = """
import pathlib, sys
arguments = dict(zip(sys.argv[1::2], sys.argv[2::2]))
lines = pathlib.Path(arguments["-s"]).read_text().splitlines()
pathlib.Path(arguments["-f"]).write_text("".join("0-0\\n" for _ in lines))
pathlib.Path(arguments["-r"]).write_text("".join("0-0 1-1\\n" for _ in lines))
with open(arguments["-s"] + ".runs", "a") as runs:
    runs.write("run\\n")
"""


def test_eflomal_runs_once_per_input_and_is_symmetrized(tmp_path, monkeypatch):
    from decoder.data import align
    script = tmp_path / "fake_eflomal.py"
    script.write_text(FAKE_EFLOMAL)
    monkeypatch.setattr(align, "_eflomal_command", lambda: [sys.executable, str(script)])
    source, target = tmp_path / "c.es", tmp_path / "c.en"
    source.write_text("a b\nc d\n")
    target.write_text("A B\nC D\n")
    forward, reverse, _, cached = align.run_eflomal(source, target, tmp_path)
    assert not cached
    assert align.symmetrize_files(forward, reverse, 2) == [{(0, 0), (1, 1)}, {(0, 0), (1, 1)}]
    assert align.run_eflomal(source, target, tmp_path)[3] is True
    target.write_text("A B\nC E\n")
    assert align.run_eflomal(source, target, tmp_path)[3] is False
    assert (tmp_path / "c.es.runs").read_text() == "run\nrun\n"
    with pytest.raises(RuntimeError, match="1 lines, expected 2"):
        (tmp_path / "short").write_text("0-0\n")
        align.symmetrize_files(tmp_path / "short", reverse, 2)
