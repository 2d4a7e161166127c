"""CONTRIBUTING.md's third recipe, followed end to end: a view is a pure function from a result to text in either
language; a command module's handler and its ``add_<command>`` wire it into the command line, with the shared
options taken from ``cli/_options.py``; a user's mistake is a sentence naming the file, exit 2. The view here (the
last logged values of a few metrics) is made up for the recipe; the log is a real public veRL run."""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import IO

import pytest
from rich.table import Table

from rlvitals.cli import COMMANDS, EXIT_OK, EXIT_USAGE, main
from rlvitals.cli import _parser as parser_module
from rlvitals.cli._common import load_all, width
from rlvitals.cli._options import Commands, add_lang
from rlvitals.render.console import WIDTH, console
from rlvitals.run.run import Run

LOG = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs" / \
    "verl__agent-opd__qwen2.5-3b-klreward0.0005-healthy"

# --- step 1: the view, as a contributor writes it in src/rlvitals/render/last_values.py ---------------------------

_WORDS = {"en": {"title": "last values of {path}", "key": "metric", "step": "step", "value": "value"},
          "zh": {"title": "{path} 的最后取值", "key": "指标", "step": "步", "value": "取值"}}
KEYS = ("critic/score/mean", "actor/entropy", "response_length/mean")


def render_last_values(run: Run, lang: str = "en", color: bool = False, width: int = WIDTH) -> str:
    buf = io.StringIO()
    con = console(buf, color, width)
    words = _WORDS[lang]
    table = Table(title=words["title"].format(path=run.path), box=None)
    for column in ("key", "step", "value"):
        table.add_column(words[column])
    for key in KEYS:
        if key in run.metrics:
            steps, values = run.series(key, finite=True)
            table.add_row(key, str(int(steps[-1])), f"{values[-1]:.4g}")
    con.print(table)
    return buf.getvalue()


# --- step 2: the command, beside its handler in the CLI module of its noun ---------------------------------------

def _last_values(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    runs, status = load_all(args.paths, None, err, lang=args.lang)
    for run in runs:
        out.write(render_last_values(run, args.lang, out.isatty(), width(out)))
    return status


def add_last_values(sub: Commands) -> None:
    cmd = sub.add("last-values", help="the last logged value of the headline metrics")
    cmd.add_argument("paths", nargs="+", metavar="PATH", help="log file or run folder")
    add_lang(cmd, "the language of the table")


@pytest.fixture
def wired(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parser_module, "ADDERS", (*parser_module.ADDERS, add_last_values))
    monkeypatch.setitem(COMMANDS, "last-values", _last_values)


def _log() -> Path:
    found = sorted(p for p in LOG.iterdir() if p.suffix in (".log", ".jsonl", ".txt") and "source" not in p.name)
    return found[0]


def test_the_command_prints_the_view_in_both_languages(wired: None) -> None:
    log = _log()
    for lang, head, title in (("en", "metric", "last values of"), ("zh", "指标", "的最后取值")):
        out = io.StringIO()
        assert main(["last-values", str(log), "--lang", lang], out=out, err=io.StringIO()) == EXIT_OK
        text = out.getvalue()
        assert title in text and head in text and "critic/score/mean" in text


def test_the_help_lists_it_and_its_shared_option(wired: None) -> None:
    out = io.StringIO()
    assert main(["last-values", "-h"], out=out, err=io.StringIO()) == 0
    assert "--lang {en,zh}" in out.getvalue()
    out = io.StringIO()
    main(["-h"], out=out, err=io.StringIO())
    assert "last-values" in out.getvalue()


def test_a_missing_file_is_a_sentence_naming_it_and_exit_2(wired: None, tmp_path: Path) -> None:
    err = io.StringIO()
    missing = tmp_path / "nope.log"
    assert main(["last-values", str(missing)], out=io.StringIO(), err=err) == EXIT_USAGE
    assert err.getvalue() == f"rlvitals: {missing}: no such file or folder\n"
