"""`cky translate` with a missing store, LM or a broken config: one clear line naming the file, exit 1."""
import subprocess
import sys


def run_translate(*args):
    return subprocess.run([sys.executable, "-m", "decoder.cli", "translate", *args], input="", capture_output=True,
                          text=True)


def test_missing_store_names_the_path(tmp_path):
    result = run_translate("--store", str(tmp_path / "no-store"), "--lm", str(tmp_path / "lm.arpa"))
    assert result.returncode == 1
    assert result.stderr.startswith(f"cky translate: {tmp_path / 'no-store'}: ")
    assert "Traceback" not in result.stderr


def test_broken_config_names_the_file(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("store = 'x'\n[weights\n", encoding="utf-8")
    result = run_translate("--config", str(config))
    assert result.returncode == 1
    assert result.stderr.startswith(f"cky translate: {config}: ")
    assert "Traceback" not in result.stderr
