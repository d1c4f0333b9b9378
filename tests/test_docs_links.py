"""The README and the pages under docs/: every relative link (and image) resolves to a file of the
repository, every #anchor to a heading of the page it names; the README stays a short manual; every
curated file under bench/results/ is cited by a page."""
from __future__ import annotations

import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def pages() -> list[str]:
    """README.md, docs/*.md and the other READMEs the docs link to."""
    found = [os.path.join(REPO, "README.md")]
    docs = os.path.join(REPO, "docs")
    found += sorted(os.path.join(docs, name) for name in os.listdir(docs) if name.endswith(".md"))
    return found


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks and indented ones (four spaces after a blank line)."""
    lines, fenced, indented, previous_blank = [], False, False, True
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.startswith("    ") and (previous_blank or indented):
            indented = True
            continue
        if line.strip():
            indented = False
        previous_blank = not line.strip()
        lines.append((number, line))
    return lines


def links(path: str) -> list[tuple[int, str]]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return [(number, match.group(1)) for number, line in prose_lines(text) for match in LINK.finditer(line)]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lowercased, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: str) -> set[str]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return {slug(line.lstrip("#")) for _, line in prose_lines(text) if re.match(r"#{1,6} ", line)}


def test_slug_is_githubs():
    assert slug("Against Moses' chart decoder") == "against-moses-chart-decoder"
    assert slug("`<s>` at the glue start") == "s-at-the-glue-start"
    assert slug("Two-pass search against cube pruning") == "two-pass-search-against-cube-pruning"


def test_code_blocks_are_not_scanned():
    text = "see [a](a.md)\n\n    cky x [--dev](dev.md)\n\n```\n[b](b.md)\n```\n[c](c.md)\n"
    assert [line for _, line in prose_lines(text)] == ["see [a](a.md)", "", "", "[c](c.md)"]


@pytest.mark.parametrize("page", pages(), ids=lambda p: os.path.relpath(p, REPO))
def test_every_relative_link_resolves(page):
    broken = []
    for number, target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(page), file_part)) if file_part else page
        where = f"{os.path.relpath(page, REPO)}:{number}: {target}"
        if not os.path.exists(resolved):
            broken.append(f"{where} (no such file)")
        elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
            broken.append(f"{where} (no heading #{anchor})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_readme_is_a_short_manual():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    assert len(text.splitlines()) <= 250
    # Dated once: the results table says when it was measured; dated history lives nowhere here.
    assert len(re.findall(r"\b20\d\d-\d\d-\d\d\b", text)) <= 1
    for heading in ("## Install", "## The two commands", "## Translating", "## Training your own system",
                    "## Results", "## Errors and recovery"):
        assert heading in text
    for page in ("docs/results.md", "docs/configuration.md", "docs/errors.md"):
        assert f"]({page})" in text


def tracked_results() -> list[str] | None:
    try:
        out = subprocess.run(["git", "ls-files", "bench/results"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.split()


def test_curated_results_are_few_and_each_cited():
    tracked = tracked_results()
    if not tracked:
        pytest.skip("not a git checkout")
    assert len(tracked) <= 25
    cited = set()
    for page in pages():
        for _, target in links(page):
            file_part = target.partition("#")[0]
            if file_part:
                cited.add(os.path.relpath(os.path.normpath(os.path.join(os.path.dirname(page), file_part)), REPO))
    # A report cites its own plots and raw rows; a file counts as cited if a page or a cited report links it.
    for report in [path for path in tracked if path.endswith(".md") and path in cited]:
        for _, target in links(os.path.join(REPO, report)):
            file_part = target.partition("#")[0]
            if file_part and not re.match(r"[a-z]+:", file_part):
                cited.add(os.path.relpath(os.path.normpath(os.path.join(REPO, os.path.dirname(report), file_part)),
                                          REPO))
    uncited = sorted(set(tracked) - cited)
    assert not uncited, f"bench/results files no page cites: {uncited}"
