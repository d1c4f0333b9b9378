"""Running `python -m decoder.cli` as from an installed package: from a directory outside the repository,
with only the `decoder` package importable (a directory holding a link to decoder/, as site-packages
would hold the installed package), so that the repository's bench/ and models/ are not."""
from __future__ import annotations

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def installed_layout(tmp_path, block: tuple[str, ...] = ()) -> dict:
    """The environment of a process that sees only the `decoder` package (and the modules of `block`
    made unimportable, as in an install without that extra)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "decoder").symlink_to(os.path.join(REPO, "decoder"))
    for module in block:
        (site / module).mkdir()
        (site / module / "__init__.py").write_text(f"raise ImportError('{module} is not installed')\n")
    return dict(os.environ, PYTHONPATH=str(site), PYTHONNOUSERSITE="1")


def run_installed(arguments: list[str], cwd, env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *arguments], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
