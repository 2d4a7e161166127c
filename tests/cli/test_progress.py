"""Progress while a long log is read: on a terminal only, never in a pipe or with --json."""

from __future__ import annotations

import importlib
import io
from pathlib import Path

import pytest

from rlvitals.cli import main
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

load_module = importlib.import_module("rlvitals.run.load")  # the module; rlvitals.run.load is also its function


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(load_module, "PROGRESS_EVERY", 50)  # a long log's updates on a short one
    path = tmp_path / "train.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in jsonl_lines(Scenario(steps=120))))
    return path


def test_a_terminal_sees_how_far_the_reading_got(log: Path) -> None:
    err = _Terminal()
    assert main(["inspect", str(log)], out=io.StringIO(), err=err) == 0
    said = err.getvalue()
    assert "reading train.jsonl: 50 records" in said and "reading train.jsonl: 100 records" in said


@pytest.mark.parametrize("argv, err", [(["inspect"], io.StringIO()), (["inspect", "--json"], _Terminal()),
                                       (["diagnose", "--json"], _Terminal())])
def test_no_progress_in_a_pipe_or_with_json(log: Path, argv: list[str], err: io.StringIO) -> None:
    main([*argv, str(log)], out=io.StringIO(), err=err)
    assert "reading" not in err.getvalue()


def test_load_reports_progress_every_so_many_records(log: Path) -> None:
    seen: list[tuple[str, int]] = []
    load_module.load(log, progress=lambda root, n: seen.append((root.name, n)))
    assert seen == [("train.jsonl", 50), ("train.jsonl", 100)]
