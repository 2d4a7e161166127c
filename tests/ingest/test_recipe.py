"""CONTRIBUTING.md's second recipe, followed end to end: a log format is one module exposing ``READER``, registered
in ``READER_MODULES``; then ``rlvitals.load`` sniffs and reads it, its keys resolve through the catalog, what it
skips is counted with file and line, and ``rlvitals formats`` lists it.

The format here is made up for the recipe — a tab-separated table a training loop might print, with a ``#tsv-log``
first line — but every value in it is real: the log history of a public TRL GRPO run of the corpus (Gemma-3-1B on
GSM8K), written out by polars."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest

import rlvitals
import rlvitals.ingest as ingest
from rlvitals.cli import main
from rlvitals.ingest import Reader, Record, SkipLog, SourceMeta
from rlvitals.words import Words

STATE = (Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs" / "trlstate__gemma3-1b-grpo-gsm8k"
         / "checkpoint-250" / "trainer_state.json")

# --- step 2 of the recipe: the module, as a contributor writes src/rlvitals/ingest/formats/tsv_log.py -------------

FORMAT = "tsv-log"
DESCRIBES = "a tab-separated metrics table whose first line is #tsv-log"
MARK = b"#tsv-log\n"


def sniff(path: Path, head: bytes) -> bool:
    return head.startswith(MARK)


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    meta.files = [str(path)]
    meta.framework = "trl"
    with path.open(encoding="utf-8") as fh:
        fh.readline()
        header = fh.readline().rstrip("\n").split("\t")
        for lineno, line in enumerate(fh, start=3):
            cells = line.rstrip("\n").split("\t")
            if len(cells) != len(header):
                skips.skip(f"{path}:{lineno}", Words(f"{len(cells)} cells where the header has {len(header)}; "
                                                     "the row was skipped",
                                                     f"这一行有 {len(cells)} 格，表头有 {len(header)} 格；已跳过"))
                continue
            row = dict(zip(header, cells, strict=True))
            values = {k: float(v) for k, v in row.items() if k != "step" and v != ""}
            yield Record(int(row["step"]), values, f"{path}:{lineno}")


READER = Reader(FORMAT, sniff, read, describes=DESCRIBES)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Step 3: the module in READER_MODULES (first here: a loose text format goes last in the real tuple, after
    every reader that could take it; none does)."""
    module = ModuleType("rlvitals.ingest.formats.tsv_log")
    module.READER = READER  # type: ignore[attr-defined]
    monkeypatch.setattr(ingest, "READER_MODULES", (module, *ingest.READER_MODULES))


def _history() -> pl.DataFrame:
    rows = [r for r in json.loads(STATE.read_text())["log_history"] if "reward" in r]
    keys = ["step", "loss", "reward", "reward_std", "kl", "completion_length", "learning_rate"]
    return pl.DataFrame([{k: r.get(k) for k in keys} for r in rows])


def _log(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "train.tsv"
    path.write_bytes(MARK + _history().write_csv(separator="\t").encode() + extra.encode())
    return path


def test_the_new_format_is_sniffed_read_and_its_keys_resolved(tmp_path: Path, registered: None) -> None:
    history = _history()
    run = rlvitals.load(_log(tmp_path))[0]
    assert (run.format, run.framework) == (FORMAT, "trl")
    assert run.steps.tolist() == history["step"].to_list()
    rewards = dict(zip(history["step"].to_list(), history["reward"].to_list(), strict=True))
    steps, values = run.series("critic/score/mean")  # TRL's `reward`, through the catalog's framework name table
    assert len(steps) == len(rewards) and all(math.isclose(v, rewards[s]) for s, v in zip(steps.tolist(),
                                                                                         values.tolist(), strict=True))
    assert rlvitals.diagnose(run).verdict in ("ok", "warn", "fail")


def test_a_bad_row_is_a_counted_skip_with_its_file_and_line(tmp_path: Path, registered: None) -> None:
    path = _log(tmp_path, "999\t0.1\n")
    line = path.read_text().count("\n")
    run = rlvitals.load(path)[0]
    assert run.skipped.count == 1
    assert run.skipped.reasons == [f"{path}:{line}: 2 cells where the header has 7; the row was skipped"]


def test_rlvitals_formats_lists_it(registered: None) -> None:
    out = io.StringIO()
    assert main(["formats"], out=out, err=io.StringIO()) == 0
    assert f"{FORMAT}  " in out.getvalue() and DESCRIBES in out.getvalue()


def test_without_registering_it_the_file_is_no_known_format(tmp_path: Path) -> None:
    with pytest.raises(rlvitals.RlvitalsError, match="train.tsv"):
        rlvitals.load(_log(tmp_path))
