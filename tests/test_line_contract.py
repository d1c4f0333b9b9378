"""The line contract of `cky translate`, property-based: for any bytes, split into lines that
may hold \\r, NUL, U+2028, a BOM, invalid UTF-8 or nothing at all, every way of running the command
(--input or stdin, stdout or --output, one or two workers, --resume after a kill at a random moment)
gives exactly one output line per input line, in order; each good line is its translation alone,
each line that is not UTF-8 is empty, and each line holding NUL (no word of it can be looked up in
the LM) is its words passed through. The command exits 0 when every line is good, 1 when one is not
(it failed: a message names it)."""
import os
import pathlib
import signal
import tempfile
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_fixtures import run_cky, start_cky
from test_decoder import decoder, model  # noqa: F401  (fixtures: the tiny system)

BOM = "\ufeff".encode()
WORDS = ["la", "casa", "verde", "es", "pequeña", "el", "perro", "un", "☃", "&#124;", "|", "[", "zz"]
SEPARATORS = [" ", "  ", "\t", "\r", "\x00", "\u2028", "\x85", "\ufeff"]
NOT_UTF8 = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80abc"]

piece = st.one_of(st.sampled_from(WORDS).map(str.encode), st.sampled_from(SEPARATORS).map(str.encode),
                  st.sampled_from(NOT_UTF8))
line = st.lists(piece, max_size=6).map(b"".join)
document = st.tuples(st.booleans(), st.lists(line, max_size=6), st.booleans())


def input_bytes(doc) -> bytes:
    with_bom, lines, final_newline = doc
    if not lines:
        return BOM if with_bom else b""
    if lines[-1] == b"":  # without its newline an empty last line would not be a line
        final_newline = True
    data = b"\n".join(lines) + (b"\n" if final_newline else b"")
    return (BOM + data) if with_bom else data


def expected_code(doc) -> int:
    """0 when every line is UTF-8 without NUL (all translate), else 1 (some lines failed)."""
    _, lines, _ = doc
    for raw in lines:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return 1
        if b"\x00" in raw:
            return 1
    return 0


def expected_lines(decoder, doc) -> list[bytes]:
    """What each line must give, from the decoder's API one line at a time (an independent answer)."""
    with_bom, lines, _ = doc
    if not lines:
        return []
    lines = list(lines)
    if not with_bom and lines[0].startswith(BOM):  # a BOM at the very start of the input is dropped
        lines[0] = lines[0][len(BOM):]
    result = []
    for raw in lines:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            result.append(b"")
            continue
        if "\x00" in text:  # a word the LM cannot look up: a failed line, its words passed through
            result.append(" ".join(text.split()).encode("utf-8"))
            continue
        result.append(decoder.translate(text).text.encode("utf-8"))
    return result


def output_lines(data: bytes) -> list[bytes]:
    assert data == b"" or data.endswith(b"\n")
    return data.split(b"\n")[:-1]


def check(code, out: bytes, expected: list[bytes], doc) -> None:
    assert output_lines(out) == expected
    assert code == expected_code(doc)


FEW = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FEW
@given(doc=document)
def test_every_way_to_run_gives_one_line_per_input_line(model, decoder, doc):
    data, expected = input_bytes(doc), expected_lines(decoder, doc)
    config = ["translate", "--config", str(model / "config.toml"), "--quiet"]
    with tempfile.TemporaryDirectory() as tmp:
        source, out, stats = (os.path.join(tmp, name) for name in ("in.txt", "out.txt", "stats.jsonl"))
        with open(source, "wb") as f:
            f.write(data)
        code, stdout, _ = run_cky(config + ["--input", source])
        check(code, stdout, expected, doc)
        code, stdout, _ = run_cky(config, stdin=data)
        check(code, stdout, expected, doc)
        code, _, _ = run_cky(config + ["--output", out, "--stats-out", stats], stdin=data)
        check(code, pathlib.Path(out).read_bytes(), expected, doc)
        assert len(output_lines(pathlib.Path(stats).read_bytes())) == len(expected)
        code, _, _ = run_cky(config + ["--input", source, "--output", out, "--workers", "2"])
        check(code, pathlib.Path(out).read_bytes(), expected, doc)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.tuples(st.booleans(), st.lists(line, min_size=5, max_size=12), st.booleans()),
       kill_after=st.floats(0.0, 0.6))
def test_resume_after_a_kill_at_a_random_moment(model, decoder, doc, kill_after):
    data, expected = input_bytes(doc), expected_lines(decoder, doc)
    with tempfile.TemporaryDirectory() as tmp:
        source, out = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.txt")
        with open(source, "wb") as f:
            f.write(data)
        args = ["translate", "--config", str(model / "config.toml"), "--quiet", "--input", source, "--output", out]
        import subprocess

        process = start_cky(args, env={"CKY_TEST_SLEEP": "0.08"}, stderr=subprocess.PIPE)
        process.stderr.readline()  # the model is loaded
        time.sleep(kill_after)
        os.killpg(process.pid, signal.SIGKILL)  # no chance to clean up: the worst interruption
        process.wait()
        process.stderr.close()
        code, _, err = run_cky(args + ["--resume"])
        assert code == expected_code(doc), err  # (the resumed run counts the failed lines before it too)
        assert output_lines(pathlib.Path(out).read_bytes()) == expected
        assert not os.path.exists(out + ".progress.json")
