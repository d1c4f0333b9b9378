"""The English language model: a 5-gram modified Kneser-Ney model built with KenLM's lmplz.

KenLM's command-line tools are not in its pip wheel, so
`models/kenlm/build_tools.sh` compiles lmplz, build_binary and query from
the KenLM sdist (cached). lmplz estimates the ARPA model (retrying with
--discount_fallback when the data are too small for the Kneser-Ney discount
estimates), build_binary converts it to KenLM's default binary format
(probing hash tables, which the decoder loads), and query measures
perplexity.

`build_rest_model` (`cky data bible-es-en --rest-lm`) builds the same model
with lower-order rest costs (Heafield, Koehn and Lavie 2012, "Language model
rest costs and space-efficient storage"): lmplz also estimates a separate
model of each lower order 1..n-1 on the same text, and `build_binary -r`
stores, next to each k-gram's probability and backoff in the n-gram model,
its probability in the k-gram model. That is what KenLM charges a word whose
left context is not known yet (a chart item's first words), corrected when the
context arrives; complete sentences score the same as with lm.bin. The
decoder loads it like lm.bin (decoder.lm.LanguageModel, kind "rest_probing").
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
BUILD_TOOLS = REPOSITORY / "models" / "kenlm" / "build_tools.sh"
# The n-gram order of the system's language model (lm.bin and lm.rest.bin).
LM_ORDER = 5


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


def estimate_arpa(bin_dir: Path, text_path: Path, arpa_path: Path, work_dir: Path, order: int,
                  memory: str = "20%") -> bool:
    """lmplz: an order-`order` modified Kneser-Ney ARPA model of `text_path`; True if it needed
    --discount_fallback (too little data for the discount estimates)."""
    lmplz = [str(bin_dir / "lmplz"), "-o", str(order), "-S", memory, "-T", str(work_dir),
             "--text", str(text_path), "--arpa", str(arpa_path)]
    result = subprocess.run(lmplz, stdout=sys.stderr, stderr=subprocess.PIPE, text=True)
    if result.returncode == 0:
        return False
    if "discount_fallback" not in result.stderr and "BadDiscount" not in result.stderr:
        raise RuntimeError(f"lmplz failed on {text_path}:\n{result.stderr[-2000:]}")
    subprocess.run([*lmplz, "--discount_fallback"], check=True, stdout=sys.stderr)
    return True


def build_language_model(text_path: Path, binary_path: Path, work_dir: Path, order: int = LM_ORDER,
                          memory: str = "20%") -> dict:
    """Estimate an order-`order` model on `text_path` (one tokenized sentence per line) into `binary_path`."""
    bin_dir = kenlm_tools()
    arpa_path = work_dir / f"lm.{order}gram.arpa"
    started = time.monotonic()
    discount_fallback = estimate_arpa(bin_dir, text_path, arpa_path, work_dir, order, memory)
    subprocess.run([str(bin_dir / "build_binary"), str(arpa_path), str(binary_path)],
                   check=True, stdout=sys.stderr)
    arpa_path.unlink()
    return {"order": order, "discount_fallback": discount_fallback,
            "seconds": round(time.monotonic() - started, 1), "bytes": binary_path.stat().st_size,
            "format": "KenLM binary, probing (build_binary default)"}


def build_rest_model(text_path: Path, rest_path: Path, work_dir: Path, order: int = LM_ORDER,
                     memory: str = "20%") -> dict:
    """The order-`order` model of `text_path` with lower-order rest costs into `rest_path`
    (KenLM rest_probing binary; see the module docstring). Cached: nothing is done when
    `rest_path` is newer than `text_path`. The ARPA files are made in `work_dir` and removed."""
    rest_path, work_dir = Path(rest_path), Path(work_dir)
    if rest_path.exists() and rest_path.stat().st_mtime >= Path(text_path).stat().st_mtime:
        return {"order": order, "cached": True, "bytes": rest_path.stat().st_size}
    if order < 2:
        raise ValueError(f"rest costs need an order of at least 2, not {order}")
    bin_dir = kenlm_tools()
    work_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    arpas = [work_dir / f"rest.{k}gram.arpa" for k in range(1, order + 1)]
    fallback = [estimate_arpa(bin_dir, text_path, arpa, work_dir, k, memory) for k, arpa in enumerate(arpas, 1)]
    partial = rest_path.with_name(rest_path.name + ".partial")
    try:
        # The lower-order files share the top model's vocabulary in the same order (one text).
        subprocess.run([str(bin_dir / "build_binary"), "-r", " ".join(str(a) for a in arpas[:-1]),
                        "probing", str(arpas[-1]), str(partial)], check=True, stdout=sys.stderr)
        partial.replace(rest_path)
    finally:
        for path in arpas + [partial]:
            path.unlink(missing_ok=True)
    return {"order": order, "cached": False, "discount_fallback": any(fallback),
            "seconds": round(time.monotonic() - started, 1), "bytes": rest_path.stat().st_size,
            "format": "KenLM binary, rest_probing (build_binary -r with lmplz models of orders "
                      f"1-{order - 1} on the same text: lower-order rest costs)"}


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
