"""A file beside a watched log is another log unless a rotation tool could have named it so.

Eval logs, per-rank logs and second launches sit beside a training log with names that begin like it
(``train_eval.log``, ``metrics-run2.jsonl``, ``x_lowent.log``). When the watched log rotates, the files
rotated off it are looked for beside it; a sibling taken for one was read whole into the watched run, so a
healthy run got ``fail`` alerts and ``watch --exit-on fail`` exited 1 where ``diagnose --fail-on fail``
exits 0 — a scheduler would have killed a healthy job."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from rlvitals.cli import main
from rlvitals.synthetic.simulate import Scenario, console_lines, jsonl_lines
from rlvitals.watch.state import WatchState
from rlvitals.watch.view import PlainView
from rlvitals.watch.watcher import Watcher, WatchOptions

HEALTHY = Scenario(steps=120, collapse_at=None)
BROKEN = Scenario(steps=120, collapse_at=30, seed=11)


def _lines(name: str, sc: Scenario) -> list[bytes]:
    if name.endswith(".jsonl"):
        return [line + b"\n" for line in jsonl_lines(sc)]
    return [line.encode() + b"\n" for line in console_lines(sc)]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("name", "sibling"), [("train.log", "train_eval.log"),
                                               ("metrics.jsonl", "metrics-run2.jsonl"),
                                               ("x.log", "x_lowent.log"),
                                               ("train.log", "train.log.source.txt")])
@pytest.mark.parametrize("rotation", ["copytruncate", "rename"])
def test_a_sibling_written_while_the_log_rotates_is_not_read_into_it(tmp_path: Path, name: str, sibling: str,
                                                                     rotation: str) -> None:
    log, other = tmp_path / name, tmp_path / sibling
    lines, foreign = _lines(name, HEALTHY), _lines(name, BROKEN)
    half = len(lines) // 2
    log.write_bytes(b"".join(lines[:half]))
    clock = Clock()
    out, err = io.StringIO(), io.StringIO()
    w = Watcher([log], WatchState(tmp_path / "s.sqlite"), [], WatchOptions(exit_on="fail"),
                view=PlainView(out, err), clock=clock, sleep=lambda s: None)
    w.cycle()
    other.write_bytes(b"".join(foreign))  # the eval log, a second launch: written since the watcher's look
    os.utime(other, ns=(2 * 10**18,) * 2)
    if rotation == "copytruncate":
        shutil.copyfile(log, log.with_name(name + ".1"))
        with log.open("r+b") as fh:
            fh.truncate(0)
    else:
        os.rename(log, log.with_name(name + ".1"))
        log.write_bytes(b"")
    with log.open("ab") as fh:
        fh.write(b"".join(lines[half:]))
    clock.now += 10.0
    w.cycle()
    clock.now += 10.0
    w.cycle()
    run = w.diagnoses[str(log)].run
    assert run.steps.tolist() == list(range(1, HEALTHY.steps + 1))
    assert sibling not in err.getvalue()  # not said to be read either
    # what diagnose says of the whole log, watch says of it live
    whole = tmp_path / "whole" / name
    whole.parent.mkdir()
    whole.write_bytes(b"".join(lines))
    said = io.StringIO()
    assert main(["diagnose", "--fail-on", "fail", str(whole)], said, io.StringIO()) == w.exit_code() == 0, said
    w.close()
