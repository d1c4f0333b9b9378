"""The English language model: a 5-gram modified Kneser-Ney model built with KenLM's lmplz.

KenLM's command-line tools are not in its pip wheel, so
`models/kenlm/build_tools.sh` compiles lmplz, build_binary and query from
the KenLM sdist (cached). lmplz estimates the ARPA model (retrying with
--discount_fallback when the data are too small for the Kneser-Ney discount
estimates), build_binary converts it to KenLM's default binary format
(probing hash tables, which the decoder loads), and query measures
perplexity.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
BUILD_TOOLS = REPOSITORY / "models" / "kenlm" / "build_tools.sh"


def kenlm_tools() -> Path:
    """Directory holding lmplz, build_binary and query (building them if needed)."""
    result = subprocess.run(["bash", str(BUILD_TOOLS)], stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{BUILD_TOOLS} failed (exit {result.returncode})")
    bin_dir = Path(result.stdout.strip().splitlines()[-1])
    for tool in ("lmplz", "build_binary", "query"):
        if not (bin_dir / tool).exists():
            raise RuntimeError(f"{BUILD_TOOLS} did not produce {bin_dir / tool}")
    return bin_dir


def build_language_model(text_path: Path, binary_path: Path, work_dir: Path, order: int = 5,
                          memory: str = "20%") -> dict:
    """Estimate an order-`order` model on `text_path` (one tokenized sentence per line) into `binary_path`."""
    bin_dir = kenlm_tools()
    arpa_path = work_dir / f"lm.{order}gram.arpa"
    started = time.monotonic()
    lmplz = [str(bin_dir / "lmplz"), "-o", str(order), "-S", memory, "-T", str(work_dir),
             "--text", str(text_path), "--arpa", str(arpa_path)]
    discount_fallback = False
    result = subprocess.run(lmplz, stdout=sys.stderr, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        if "discount_fallback" not in result.stderr and "BadDiscount" not in result.stderr:
            raise RuntimeError(f"lmplz failed on {text_path}:\n{result.stderr[-2000:]}")
        discount_fallback = True
        subprocess.run([*lmplz, "--discount_fallback"], check=True, stdout=sys.stderr)
    subprocess.run([str(bin_dir / "build_binary"), str(arpa_path), str(binary_path)],
                   check=True, stdout=sys.stderr)
    arpa_path.unlink()
    return {"order": order, "discount_fallback": discount_fallback,
            "seconds": round(time.monotonic() - started, 1), "bytes": binary_path.stat().st_size,
            "format": "KenLM binary, probing (build_binary default)"}


def perplexity(binary_path: Path, text_path: Path) -> dict:
    """KenLM `query -v summary` on a tokenized text: perplexity with and without OOVs, OOV count."""
    bin_dir = kenlm_tools()
    with open(text_path, encoding="utf-8") as text:
        result = subprocess.run([str(bin_dir / "query"), "-v", "summary", str(binary_path)],
                                stdin=text, capture_output=True, text=True, check=True)
    output = result.stdout + result.stderr

    def number(label: str) -> float | None:
        match = re.search(r"^" + label + r":\s*([-\d.e+]+)", output, re.MULTILINE)
        return float(match.group(1)) if match else None

    return {"perplexity_including_oovs": number("Perplexity including OOVs"),
            "perplexity_excluding_oovs": number("Perplexity excluding OOVs"),
            "oovs": number("OOVs"), "tokens": number("Tokens"),
            "method": f"KenLM query -v summary on {text_path.name} (tokenized, lowercased; includes </s>)"}
