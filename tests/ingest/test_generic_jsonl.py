"""Generic JSONL reader: step-key choice, flattening, nulls, strings, bad lines, W&B history."""

from __future__ import annotations

import io
import json
import math
import tempfile
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlvitals
from rlvitals import load
from rlvitals.cli import main
from rlvitals.ingest import SkipLog, SourceMeta, find_reader, generic_jsonl


def raw_at(run: rlvitals.Run, key: str, step: int) -> Any:
    return run.raw.filter(pl.col("step") == step)[key].item()


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_nested_nulls_strings_lists_and_bad_lines(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "metrics.jsonl", [
        '{"step": 1, "loss": 0.5, "reward": {"mean": 0.1, "std": 0.2}, "lr": null, "phase": "warmup",'
        ' "hist": [1, 2, 3], "done": false}',
        '{"step": 2, "loss": ',
        "[1, 2]",
        '{"step": "x", "loss": 1.0}',
        "",
        '{"step": 3.0, "loss": NaN, "reward": {"mean": 0.3, "std": Infinity}, "phase": "main"}',
        '{"loss": 0.7}',
        '{"step": 4, "loss": 0.25, "reward": {"mean": 0.4, "inner": {"deep": 7}}}',
    ])
    (run,) = load(path)
    assert run.format == "jsonl"
    assert run.steps.tolist() == [1, 3, 4]
    assert sorted(c for c in run.raw.columns if c != "step") == [
        "done", "loss", "lr", "reward/inner/deep", "reward/mean", "reward/std"]
    assert raw_at(run, "loss", 1) == 0.5
    assert raw_at(run, "reward/std", 1) == 0.2
    assert math.isnan(raw_at(run, "lr", 1))  # null is NaN
    assert raw_at(run, "lr", 3) is None  # absent is not logged
    assert raw_at(run, "done", 1) == 0.0
    assert math.isnan(raw_at(run, "loss", 3))
    assert raw_at(run, "reward/std", 3) == math.inf
    assert raw_at(run, "reward/inner/deep", 4) == 7.0
    assert run.text == {"phase": {1: "warmup", 3: "main"}}
    assert run.skipped.count == 4
    assert run.skipped.reasons[0].startswith(f"{path}:2: invalid JSON (Expecting value at column ")
    assert run.skipped.reasons[1:] == [
        f"{path}:3: expected a JSON object, got list; the line was skipped",
        f"{path}:4: step 'x' is not an integer; the line was skipped",
        f"{path}:7: no 'step' in this line; the line was skipped",
    ]


def test_wandb_history_uses_train_global_step(tmp_path: Path) -> None:
    table = {"_type": "table-file", "path": "media/table/completions_3_ab.table.json", "ncols": 5, "nrows": 8,
             "sha256": "ab", "size": 2048}
    rows: list[dict[str, Any]] = []
    for n, step in enumerate([1, 2, 3, 4]):
        rows.append({"profiling/Time taken: GRPOTrainer._prepare_inputs": 4.2 + n, "_step": 3 * n,
                     "_runtime": 10.0 + n, "_timestamp": 1.7e9 + n})
        rows.append({"train/loss": 0.1 * step, "train/reward": step / 4, "train/epoch": step / 4,
                     "train/global_step": step, "_step": 3 * n + 1, "_runtime": 11.0 + n,
                     "_timestamp": 1.7e9 + n, "_wandb": {"runtime": 11}})
        if step % 2 == 0:
            rows.append({"eval/loss": 0.9 / step, "train/epoch": step / 4, "train/global_step": step,
                         "_step": 3 * n + 2, "_runtime": 12.0 + n, "_timestamp": 1.7e9 + n})
    rows.append({"completions": table, "_step": 12, "_runtime": 20.0, "_timestamp": 1.7e9 + 9})
    path = write_lines(tmp_path / "wandb-history.jsonl", [json.dumps(r) for r in rows])
    assert find_reader(path).format == "jsonl"
    (run,) = load(path)
    assert run.steps.tolist() == [1, 2, 3, 4]
    assert run.train_steps.tolist() == [1, 2, 3, 4]
    assert sorted(c for c in run.raw.columns if c != "step") == ["eval/loss", "train/epoch", "train/loss",
                                                               "train/reward"]
    assert raw_at(run, "eval/loss", 4) == 0.9 / 4
    assert raw_at(run, "train/loss", 3) == pytest.approx(0.3)
    assert not any("twice" in note for note in run.notes)  # the eval line's train/epoch was dropped
    assert any("5 lines had W&B's _step but no train/global_step" in note for note in run.notes)
    assert run.skipped.count == 0


def test_step_key_priority() -> None:
    assert generic_jsonl.choose_step_key([["_step", "loss"], ["global_step", "step"]]) == "global_step"
    assert generic_jsonl.choose_step_key([["iteration", "iter"]]) == "iteration"
    assert generic_jsonl.choose_step_key([["loss"]]) is None


def test_global_step_beats_step_and_counters_are_not_metrics(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "log.jsonl", [
        json.dumps({"step": 100 + i, "global_step": i, "_step": 7 * i, "iteration": i, "loss": i / 10})
        for i in (1, 2, 3)])
    (run,) = load(path)
    assert run.steps.tolist() == [1, 2, 3]
    assert run.raw.columns == ["step", "loss"]
    assert raw_at(run, "loss", 2) == 0.2


def test_without_step_key_lines_are_numbered(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "rows.jsonl", ['{"loss": 1.0}', "", '{"loss": 0.5}', '{"loss": 0.25}'])
    (run,) = load(path)
    assert run.steps.tolist() == [1, 2, 3]
    assert raw_at(run, "loss", 3) == 0.25
    assert any("numbered 1, 2, 3" in note for note in run.notes)


@pytest.mark.parametrize(("text", "taken"), [
    ('\n\n{"step": 1, "loss": 0.1}\n', True),
    ('{"a": NaN}\n', True),
    ('{"step": 1, "data": {"actor/pg_loss": 0.1}}\n', False),  # veRL's file logger
    ("{\n  \"log_history\": []\n}\n", False),  # pretty-printed JSON is not JSONL
    ("step:1 - loss:0.1\n", False),
    ("[1, 2]\n", False),
    ("", False),
    # a program's event log (W&B's debug-internal.log, structlog): a level and a message, not metrics
    ('{"time":"2026-12-06T00:22:22Z","level":"INFO","msg":"stream: started","id":"abc123"}\n', False),
    ('{"event": "loaded", "severity": "debug", "step": 3}\n', False),
    ('{"step": 3, "message_len": 12, "level_acc": 0.5}\n', True),
])
def test_sniff(tmp_path: Path, text: str, taken: bool) -> None:
    assert generic_jsonl.sniff(tmp_path / "x.jsonl", text.encode()) is taken


def test_sniff_accepts_a_first_line_longer_than_the_head(tmp_path: Path) -> None:
    head = ('{"step": 1, "blob": "' + "x" * (70 << 10)).encode()[: 64 << 10]
    assert generic_jsonl.sniff(tmp_path / "x.jsonl", head)


def test_verl_jsonl_still_goes_to_its_own_reader(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "verl.jsonl", ['{"step": 1, "data": {"actor/pg_loss": 0.1}}'])
    assert find_reader(path).format == "verl-jsonl"


def test_cli_inspect_json(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "m.jsonl", [json.dumps({"step": s, "loss": 1 / s}) for s in (1, 2, 3)])
    out, err = io.StringIO(), io.StringIO()
    assert main(["inspect", "--json", str(path)], out=out, err=err) == 0
    report = orjson.loads(out.getvalue())
    assert (report["format"], report["steps"], report["first_step"], report["last_step"]) == ("jsonl", 3, 1, 3)


leaf = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=True, allow_infinity=True),
                 st.integers(-(2**53), 2**53), st.text(max_size=5))
names = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=1, max_size=3)
records = st.dictionaries(names, st.one_of(leaf, st.dictionaries(names, leaf, max_size=3)), max_size=4)


def expected_leaves(obj: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if isinstance(value, dict):
            out.update(expected_leaves(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(records, min_size=1, max_size=10))
def test_round_trip_of_written_lines(objs: list[dict[str, Any]]) -> None:
    meta, skips = SourceMeta("jsonl"), SkipLog()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.jsonl"
        path.write_text("".join(json.dumps({"step": i, **obj}) + "\n" for i, obj in enumerate(objs)))
        got = {r.step: r.values for r in generic_jsonl.read(path, meta, skips)}
    assert skips.count == 0
    for i, obj in enumerate(objs):
        want = {k: v for k, v in expected_leaves(obj).items() if k not in generic_jsonl.STEP_KEYS}
        values = got.get(i, {})
        assert set(values) == set(want)
        for key, value in want.items():
            if value is None or (isinstance(value, float) and math.isnan(value)):
                assert math.isnan(values[key])  # type: ignore[arg-type]
            elif isinstance(value, str):
                assert values[key] == value
            else:
                assert values[key] == float(value)


def test_wandb_rows_keep_their_clock_not_as_metrics(tmp_path: Path) -> None:
    """Rows exported from W&B (``run.scan_history()`` dumped as JSON lines): ``_timestamp`` is each
    step's wall time and ``_timestamp - _runtime`` the start; neither becomes a metric."""
    rows = [{"_step": i, "train/global_step": i + 1, "train/loss": 1 / (i + 1), "_runtime": 30 + 12.5 * i,
             "_timestamp": 1_700_000_030 + 12.5 * i} for i in range(5)]
    [run] = load(write_lines(tmp_path / "history.jsonl", [json.dumps(r) for r in rows]))
    assert run.wall is not None and (run.wall.source, run.wall.epoch) == ("W&B _timestamp", True)
    assert run.wall_times[0].tolist() == [1, 2, 3, 4, 5]
    assert run.wall_times[1].tolist() == [r["_timestamp"] for r in rows]
    assert run.wall.started == 1_700_000_000
    assert set(run.raw.columns) == {"step", "train/loss"}


def test_runtime_alone_is_elapsed_seconds_and_no_clock_is_none(tmp_path: Path) -> None:
    rows = [{"step": i, "loss": 0.5, "_runtime": 2.0 * i} for i in range(1, 4)]
    [run] = load(write_lines(tmp_path / "a.jsonl", [json.dumps(r) for r in rows]))
    assert run.wall is not None and (run.wall.source, run.wall.epoch, run.wall.started) == ("W&B _runtime", False, None)
    assert run.wall_times[1].tolist() == [2.0, 4.0, 6.0]
    [plain] = load(write_lines(tmp_path / "b.jsonl", [json.dumps({"step": i, "loss": 0.5}) for i in range(3)]))
    assert plain.wall is None and plain.wall_times is None
