"""``watch --rotated-into DIR`` and ``--rotation-pattern REGEX``, end to end through the command line: two
``watch --once`` on one state file, the log rotated between them the way the watcher cannot guess (into
another folder, under a name of the user's own scheme). With the option nothing is lost; without it the
lost steps are named, and so is the option to pass."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from rlvitals.cli import main
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.watch.state import WatchState

SC = Scenario(steps=120, collapse_at=None, grad_spike_at=None)
LINES = [line + b"\n" for line in jsonl_lines(SC)]


def _watch(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["watch", "--once", *argv], out, err)
    return code, err.getvalue()


def _rotate(tmp_path: Path, log: Path, to: Path, state: Path, *options: str) -> tuple[list[int], str]:
    """Steps 1-50 read by a first watch; 51-70 written and the log rotated to ``to`` before the second."""
    log.write_bytes(b"".join(LINES[:50]))
    assert _watch(str(log), "--state", str(state), *options)[0] == 0
    with log.open("ab") as fh:
        fh.write(b"".join(LINES[50:70]))
    to.parent.mkdir(exist_ok=True)
    os.rename(log, to)
    log.write_bytes(b"".join(LINES[70:]))
    code, said = _watch(str(log), "--state", str(state), *options)
    assert code == 0, said
    db = WatchState(state)
    steps = sorted(r.step for r in db.records(str(log)) if r.kind != "summary")
    db.close()
    return steps, said


@pytest.mark.parametrize(("into", "option"), [("old/run.jsonl.1", "old"),
                                              ("archive/run.jsonl.1", None)])
def test_rotated_into_another_folder(tmp_path: Path, into: str, option: str | None) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    log = folder / "run.jsonl"
    where = ["--rotated-into", str(tmp_path / "logs" / "archive")] if option is None else ["--rotated-into", option]
    steps, said = _rotate(tmp_path, log, folder / into, tmp_path / "s.sqlite", *where)
    assert steps == list(range(1, SC.steps + 1)), said
    assert "were not read" not in said and "not seen" not in said, said


def test_without_the_option_the_lost_steps_and_the_option_are_named(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    steps, said = _rotate(tmp_path, log, tmp_path / "old" / "run.jsonl.1", tmp_path / "s.sqlite")
    assert steps == list(range(1, 51)) + list(range(71, SC.steps + 1))
    assert "the steps after 50 and before 71 were not read" in said, said
    assert "--rotated-into DIR" in said and "--rotation-pattern REGEX" in said, said


@pytest.mark.parametrize("pattern", [r"run\.jsonl\.old-\d+", None])
def test_a_rotation_named_by_the_users_own_scheme(tmp_path: Path, pattern: str | None) -> None:
    log = tmp_path / "run.jsonl"
    options = ["--rotation-pattern", pattern] if pattern else []
    steps, said = _rotate(tmp_path, log, tmp_path / "run.jsonl.old-3", tmp_path / "s.sqlite", *options)
    if pattern:
        assert steps == list(range(1, SC.steps + 1)), said
    else:  # not a name a rotation tool gives: another log, never read into this one
        assert steps == list(range(1, 51)) + list(range(71, SC.steps + 1)), said
        assert "--rotation-pattern REGEX" in said


def test_a_pattern_that_does_not_compile_is_a_usage_error(tmp_path: Path) -> None:
    code, said = _watch(str(tmp_path / "run.jsonl"), "--rotation-pattern", "run.jsonl.(")
    assert code == 2
    assert said.startswith("rlvitals: --rotation-pattern 'run.jsonl.(': not a regular expression "
                           "(missing ), unterminated subpattern at position 10)"), said


def test_the_help_explains_both_options() -> None:
    out = io.StringIO()
    assert main(["watch", "--help"], out, io.StringIO()) == 0
    flat = " ".join(out.getvalue().split())
    assert "--rotated-into DIR" in flat and "logrotate's olddir" in flat
    assert "--rotation-pattern REGEX" in flat
