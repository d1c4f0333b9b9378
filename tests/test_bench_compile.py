"""bench/bench_compile.py on a small table: every variant compiles in its own process, the stores
are byte-identical, and the JSON holds CPU seconds, peak RSS and machine info."""
import json
import os
import subprocess
import sys

from decoder.grammar import feature_names_path, write_rules
from decoder.synthetic import random_grammar

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_bench_compile_on_a_small_table(tmp_path):
    table = tmp_path / "rules.gz"
    write_rules(random_grammar(500, seed=2, n_features=2), table)
    with open(feature_names_path(table), "w") as f:
        json.dump(["a", "b"], f)
    output = tmp_path / "compile.json"
    completed = subprocess.run([sys.executable, "-m", "bench.bench_compile", "--table", str(table), "--reference",
                                "--output", str(output), "--work-dir", str(tmp_path / "work")],
                               cwd=REPO, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(output.read_text())
    assert result["identical_stores"] is True
    assert result["source_rules"] == 500 and result["machine"]["cpus"] >= 1
    for name in ("arrays", "reference"):
        variant = result["variants"][name]
        assert variant["cpu"] > 0 and variant["peak_rss_mb"] > 10
        assert set(variant["cpu_seconds"]) == {"read", "binarize", "compile", "write"}
    assert "| arrays |" in completed.stdout
