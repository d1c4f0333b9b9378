"""Decoder configs (TOML) as tuning and benchmarks use them: read, change weights or settings, write.

The decoder's config holds the feature weights in a `[weights]` table (by
feature name); other settings (pop limit, beam, ...) are looked up by key
wherever they are in the file, so that this module does not depend on how the
decoder groups them. Reading, the keys and the path rule are decoder.config's.
"""
from __future__ import annotations

import copy
import math
import re

from ..config import PATH_KEYS, WEIGHTS, read_toml, relocate_paths  # noqa: F401 (PATH_KEYS: its old home)
from ..errors import OutputError
from ..outputs import atomic_write, check_output_directory, is_stream
from ..settings import EXPERIMENTAL_NAMES, EXPERIMENTAL_TABLE

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def read_config(path: str) -> dict:
    """The config file as written (tables kept); a TOML error is a ConfigError naming the file."""
    return read_toml(path)


def find_key(config: dict, key: str):
    """The table holding `key` (depth first), or None."""
    if key in config:
        return config
    for value in config.values():
        if isinstance(value, dict):
            table = find_key(value, key)
            if table is not None:
                return table
    return None


def with_settings(config: dict, weights: dict | None = None, **settings) -> dict:
    """A copy of config with these weights merged into [weights] and each setting replaced where it is
    (or added: at the top level, an experimental setting in the [experimental] table)."""
    config = copy.deepcopy(config)
    if weights is not None:
        config.setdefault(WEIGHTS, {}).update({name: float(value) for name, value in weights.items()})
    for key, value in settings.items():
        table = find_key(config, key)
        if table is None:  # added: an experimental setting to its table, any other key at the top level
            table = config.setdefault(EXPERIMENTAL_TABLE, {}) if key in EXPERIMENTAL_NAMES else config
        table[key] = value
    return config


def absolute_paths(config: dict, base_dir: str) -> dict:
    """A copy with relative paths (decoder.config.PATH_KEYS) made absolute against base_dir (the
    config's directory), so that the config still works when written elsewhere."""
    return relocate_paths(config, base_dir)


# ---- writing TOML (the subset configs use: tables of scalars and lists of scalars) ------------------

def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def dumps(config: dict) -> str:
    lines: list[str] = []

    def table(values: dict, prefix: tuple) -> None:
        scalars = {k: v for k, v in values.items() if not isinstance(v, dict)}
        tables = {k: v for k, v in values.items() if isinstance(v, dict)}
        if prefix and (scalars or not tables):
            lines.append("")
            lines.append("[" + ".".join(_key(p) for p in prefix) + "]")
        for key, value in scalars.items():
            lines.append(f"{_key(key)} = {_value(value)}")
        for key, value in tables.items():
            table(value, prefix + (key,))

    table(config, ())
    return "\n".join(lines).lstrip("\n") + "\n"


def check_output_path(path: str) -> None:
    """A config is written by replacing the file at `path` (and its log beside it): refuse a path that
    is not a regular file, which replacing would destroy (`--out /dev/stdout` would turn the device
    into a file), or whose directory does not exist."""
    if is_stream(path):
        raise OutputError(path, "is not a regular file (a directory, device or pipe): the config is written "
                                "by replacing the file at the path; give a file path")
    check_output_directory(path)


def write_config(config: dict, path: str, header: str | None = None) -> None:
    check_output_path(path)
    text = dumps(config)
    if header:
        text = "".join(f"# {line}\n" for line in header.splitlines()) + text
    with atomic_write(path) as f:
        f.write(text)
