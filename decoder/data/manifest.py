"""manifest.json: what a build wrote (files, line and token counts) and how (statistics, timings, versions)."""
from __future__ import annotations

import importlib.metadata
import json
import platform
import subprocess
from pathlib import Path


def file_summary(path: Path) -> dict:
    """Bytes, lines and whitespace-separated tokens of a text file (bytes only for binaries and gzip files)."""
    summary: dict = {"bytes": path.stat().st_size}
    if path.suffix in (".bin", ".gz"):
        return summary
    lines = tokens = 0
    with open(path, encoding="utf-8") as text:
        for line in text:
            lines += 1
            tokens += len(line.split())
    summary["lines"] = lines
    if path.suffix in (".es", ".en"):
        summary["tokens"] = tokens
    return summary


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def debian_version(package: str) -> str:
    result = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    return result.stdout.strip() or "not installed"


def git_commit(repository: Path) -> str:
    result = subprocess.run(["git", "-C", str(repository), "rev-parse", "HEAD"], capture_output=True, text=True)
    return result.stdout.strip() or "unknown"


def write_manifest(out_dir: Path, content: dict) -> Path:
    """Add the summaries of the output files to `content` and write DIR/manifest.json."""
    files = {}
    for path in sorted(out_dir.iterdir()):
        if path.is_file() and path.name != "manifest.json":
            files[path.name] = file_summary(path)
    manifest = {**content, "files": files, "python": platform.python_version()}
    path = out_dir / "manifest.json"
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    temporary.replace(path)
    return path
