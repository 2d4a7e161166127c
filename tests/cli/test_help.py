"""CLI habits: --version, help with every option explained and its default, examples that parse,
formats described, near misses suggested."""

from __future__ import annotations

import argparse
import io
import shlex

import pytest

from rlvitals import __version__
from rlvitals.cli import main
from rlvitals.cli._parser import EXAMPLES, build_parser
from rlvitals.ingest import readers


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_version_prints_the_package_version() -> None:
    assert _cli("--version") == (0, f"rlvitals {__version__}\n", "")


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_option_says_what_it_does_and_the_help_shows_examples(name: str) -> None:
    parser = _subcommands()[name]
    silent = [a.dest for a in parser._actions if not a.help]
    assert not silent, f"{name}: options without help: {silent}"
    code, out, _ = _cli(name, "--help")
    assert code == 0 and out.startswith("usage: rlvitals " + name) and "\nexamples:\n" in out
    for line in EXAMPLES[name]:
        assert f"  {line}\n" in out


@pytest.mark.parametrize("line", [line for lines in EXAMPLES.values() for line in lines])
def test_every_example_in_the_help_parses(line: str) -> None:
    words = shlex.split(line.split(" > ")[0])
    assert words[0] == "rlvitals"
    args = build_parser().parse_args(words[1:])
    assert args.command == words[1]


def test_help_shows_defaults_unless_the_text_says_them() -> None:
    _, out, _ = _cli("watch", "--help")
    flat = " ".join(out.split())
    assert "seconds between polls (default: 0.5)" in flat and "(default: 600.0)" in flat
    _, out, _ = _cli("sample", "--help")
    assert "(default 2)" in out and "(default 2) (default" not in out  # said once, in its own words


def test_formats_lists_each_format_once_with_what_it_reads() -> None:
    code, out, _ = _cli("formats")
    lines = out.splitlines()
    formats = list(dict.fromkeys(r.format for r in readers()))
    assert code == 0 and [line.split()[0] for line in lines[:len(formats)]] == formats
    assert all(r.describes for r in readers()), [r.format for r in readers() if not r.describes]
    assert "veRL's console logger: step:N - key:value lines" in out and lines[-1].startswith("rlvitals finds")


@pytest.mark.parametrize("typed, suggested", [
    ("actor/entrpy", "'actor/entropy'"), ("pg_clip_frac", "'actor/pg_clipfrac'"), ("kl_los", "'actor/kl_loss'"),
    ("response_lenght/mean", "'response_length/mean'"),
])
def test_explain_suggests_the_nearest_names(typed: str, suggested: str) -> None:
    code, out, err = _cli("explain", typed)
    assert (code, out) == (2, "")
    assert f"Did you mean {suggested}" in err and err.rstrip().endswith("to see every metric.")


def test_explain_suggests_nothing_for_a_name_like_none() -> None:
    _, _, err = _cli("explain", "xyzzy")
    assert "Did you mean" not in err
