"""The command line's surface: `cky translate --help` groups its options, one name per concept on every
command (--workers, --quiet; older spellings are hidden aliases that still work), and help texts that point to
config keys and documentation pages, never to source files."""
import argparse
import re

import pytest

from decoder.cli import build_parser

COMMANDS = ("translate", "extract", "compile", "binarize", "data", "evaluate", "tune", "serve")
MAIN_GROUPS = ("input and output", "model", "search", "performance")


def sub_parser(command: str) -> argparse.ArgumentParser:
    parser = build_parser(command)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    raise AssertionError(f"no subcommand {command}")


def visible_options(group) -> list[str]:
    return [action.option_strings[0] for action in group._group_actions
            if action.option_strings and action.help != argparse.SUPPRESS and "-h" not in action.option_strings]


def test_translate_help_groups_its_options_with_at_most_15_in_the_main_groups():
    parser = sub_parser("translate")
    groups = {group.title: visible_options(group) for group in parser._action_groups}
    assert all(title in groups for title in MAIN_GROUPS)
    main = [option for title in MAIN_GROUPS for option in groups[title]]
    assert 0 < len(main) <= 15
    ungrouped = groups.get("options", []) + groups.get("optional arguments", [])
    assert ungrouped == []  # (every option is in a group)
    assert {"--config", "--store", "--lm"} == set(groups["model"])
    assert {"--search", "--pop-limit", "--beam-size"} <= set(groups["search"])
    assert {"--workers"} <= set(groups["performance"])
    text = parser.format_help()
    for title in MAIN_GROUPS:
        assert f"{title}:" in text


def test_translate_hides_the_experimental_settings_and_the_removed_flags():
    text = sub_parser("translate").format_help()
    assert "--experimental" not in text
    for removed in ("--pop-count", "--virtual-pop-limit", "--rule-order", "--table-limit-rank", "--weight-pushing",
                    "--rule-lookahead", "--pop-threshold"):
        assert removed not in text
        with pytest.raises(SystemExit):
            build_parser("translate").parse_args(["translate", removed, "1"])


@pytest.mark.parametrize("command", COMMANDS)
def test_help_texts_name_no_source_files(command):
    text = sub_parser(command).format_help()
    assert not re.search(r"\w+\.py\b|decoder/|see decoder\.", text), text


@pytest.mark.parametrize("command, old, value", [("extract", "--jobs", "3"), ("data", "--processes", "3")])
def test_workers_is_the_one_name_and_old_spellings_are_hidden_aliases(command, old, value):
    parser = sub_parser(command)
    text = parser.format_help()
    assert "--workers" in text and old not in text
    full = build_parser(command)
    prefix = [command] + (["bible-es-en"] if command == "data" else ["--out", "x.gz"])
    assert full.parse_args(prefix + ["--workers", value]).workers == int(value)
    assert full.parse_args(prefix + [old, value]).workers == int(value)


@pytest.mark.parametrize("command, prefix", [
    ("translate", []), ("extract", ["--out", "x.gz"]), ("tune", ["--config", "c", "--dev-src", "s", "--dev-ref", "r"]),
    ("compile", ["r", "s"]), ("binarize", ["in", "out"])])
def test_quiet_is_the_one_name_of_no_progress(command, prefix):
    text = sub_parser(command).format_help()
    assert "--quiet" in text and "--no-progress" not in text
    args = build_parser(command).parse_args([command, *prefix, "--quiet"])
    assert args.quiet is True


def test_older_progress_spellings_still_work():
    assert build_parser("extract").parse_args(["extract", "--out", "x.gz", "--no-progress"]).quiet is True
    compile_args = build_parser("compile").parse_args(["compile", "r", "s", "--progress"])
    assert compile_args.progress is True and compile_args.quiet is False


def test_translate_search_help_names_config_keys_and_pages():
    text = " ".join(sub_parser("translate").format_help().split())
    for key in ("`pop_limit`", "`beam_size`", "`table_limit`", "`max_span`", "`search`"):
        assert key in text
    assert "docs/configuration.md" in text and "docs/search.md" in text
