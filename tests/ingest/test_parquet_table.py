"""Parquet metrics reader: nulls vs NaN, text and non-scalar columns, slicing, W&B rows, rollouts refused."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

import rlvitals
from rlvitals import load
from rlvitals.cli import main
from rlvitals.errors import InputError, UnknownFormatError
from rlvitals.ingest import find_reader, parquet_table


def raw_at(run: rlvitals.Run, key: str, step: int) -> Any:
    return run.raw.filter(pl.col("step") == step)[key].item()


def metrics_parquet(path: Path) -> Path:
    pl.DataFrame({
        "step": [1, 2, 3, 4],
        "loss": [0.5, float("nan"), None, 0.25],
        "reward": [0.1, 0.2, 0.3, 0.4],
        "kl": pl.Series([1, 2, 3, 4], dtype=pl.Int32),
        "phase": ["warmup", None, "main", "main"],
        "clipped": [True, False, None, True],
        "hist": [[1.0, 2.0], [3.0], [], None],
    }).write_parquet(path)
    return path


def test_metrics_table(tmp_path: Path) -> None:
    path = metrics_parquet(tmp_path / "metrics.parquet")
    assert find_reader(path).format == "parquet"
    (run,) = load(path)
    assert run.format == "parquet"
    assert run.steps.tolist() == [1, 2, 3, 4]
    assert run.raw.columns == ["step", "loss", "reward", "kl", "clipped"]
    assert raw_at(run, "loss", 1) == 0.5
    assert math.isnan(raw_at(run, "loss", 2))  # a stored NaN stays NaN
    assert raw_at(run, "loss", 3) is None  # a null was not logged
    assert raw_at(run, "kl", 4) == 4.0
    assert raw_at(run, "clipped", 2) == 0.0
    assert run.text == {"phase": {1: "warmup", 3: "main", 4: "main"}}
    assert any("1 columns are not numbers or text and were ignored: hist" in n for n in run.notes)
    assert run.bytes_read == path.stat().st_size


def test_rows_are_read_in_slices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    n = 1000
    path = tmp_path / "big.parquet"
    pl.DataFrame({"global_step": list(range(10, 10 * n + 1, 10)), "loss": [i / n for i in range(n)]}) \
        .write_parquet(path, row_group_size=128)
    monkeypatch.setattr(parquet_table, "BATCH_CELLS", 70)  # 35 rows a slice with two columns
    (run,) = load(path)
    assert run.steps.tolist() == list(range(10, 10 * n + 1, 10))
    assert raw_at(run, "loss", 370) == 36 / n
    assert run.raw["loss"].to_list() == [i / n for i in range(n)]


def test_wandb_history_rows_without_global_step(tmp_path: Path) -> None:
    path = tmp_path / "history.parquet"
    pl.DataFrame({
        "_step": [0, 1, 2, 3, 4],
        "_runtime": [1.0, 2.0, 3.0, 4.0, 5.0],
        "train/global_step": [None, 1.0, None, 2.0, 2.0],
        "train/loss": [None, 0.3, None, 0.2, None],
        "eval/loss": [None, None, None, None, 0.7],
        "train/epoch": [None, 0.5, None, 1.0, 1.0],
        "profiling/Time taken: x": [4.0, None, 5.0, None, None],
    }).write_parquet(path)
    (run,) = load(path)
    assert run.steps.tolist() == [1, 2]
    # the profiling timings sit only on the rows without a training step, which are left out
    assert sorted(run.raw.columns) == ["eval/loss", "step", "train/epoch", "train/loss"]
    assert raw_at(run, "eval/loss", 2) == 0.7
    assert raw_at(run, "train/epoch", 2) == 1.0
    assert any("2 rows had W&B's _step but no train/global_step" in n for n in run.notes)
    assert not any("twice" in n for n in run.notes)
    assert run.skipped.count == 0


def test_bad_steps_are_counted_and_no_step_column_numbers_rows(tmp_path: Path) -> None:
    path = tmp_path / "a.parquet"
    pl.DataFrame({"step": [1.0, 1.5, None, 3.0], "loss": [1.0, 2.0, 3.0, 4.0]}).write_parquet(path)
    (run,) = load(path)
    assert run.steps.tolist() == [1, 3]
    assert run.skipped.reasons == [f"{path}#row 2: step 1.5 is not an integer; the row was skipped",
                                   f"{path}#row 3: step None is not an integer; the row was skipped"]
    bare = tmp_path / "b.parquet"
    pl.DataFrame({"loss": [1.0, 2.0, 3.0]}).write_parquet(bare)
    (run,) = load(bare)
    assert run.steps.tolist() == [1, 2, 3]
    assert any("numbered 1, 2, 3" in n for n in run.notes)


def test_completions_parquet_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "completions_00010.parquet"
    pl.DataFrame({
        "step": ["10", "10"],
        "prompt": [[{"role": "user", "content": "2+2?"}], [{"role": "user", "content": "3+3?"}]],
        "completion": ["4", "7"],
        "accuracy_reward": [1.0, 0.0],
        "advantage": [0.7, -0.7],
    }).write_parquet(path)
    assert find_reader(path).format == "parquet"
    with pytest.raises(UnknownFormatError, match=r"holds rollouts .*not training metrics.*rlvitals rollouts"):
        load(path)


def test_corrupt_parquet_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 64)
    assert find_reader(path).format == "parquet"
    with pytest.raises(InputError, match=r"broken\.parquet: not a readable Parquet file"):
        load(path)


def test_cli_inspect_json(tmp_path: Path) -> None:
    path = metrics_parquet(tmp_path / "metrics.parquet")
    out, err = io.StringIO(), io.StringIO()
    assert main(["inspect", "--json", str(path)], out=out, err=err) == 0
    report = orjson.loads(out.getvalue())
    assert (report["format"], report["steps"], report["text_keys"]) == ("parquet", 4, ["phase"])


#: a Parquet file with bytes of its metadata changed (found by mutating a small table): polars panics on it,
#: and a panic is a BaseException that ``except Exception`` lets through
PANIC = Path(__file__).parent / "regressions" / "parquet_metadata_panic.parquet"


def test_a_parquet_file_that_makes_polars_panic_is_an_input_error_not_a_crash(tmp_path: Path) -> None:
    from rlvitals.cli import main
    from rlvitals.rollout import read_rollouts

    with pytest.raises(InputError, match=r"not a readable Parquet file \(PanicException: "):
        rlvitals.load(PANIC)
    err = io.StringIO()
    assert main(["inspect", str(PANIC)], io.StringIO(), err) == 2 and "PanicException" in err.getvalue()
    folder = tmp_path / "completions"
    folder.mkdir()
    (folder / "completions_00001.parquet").write_bytes(PANIC.read_bytes())
    with pytest.raises(InputError, match=r"cannot be read as Parquet \(PanicException: .*\); the file was skipped"):
        read_rollouts(folder)


def test_columns_named_like_regular_expressions_are_read_as_names(tmp_path: Path) -> None:
    # polars reads a name "^…$" as a regular expression: "^.*$" would select every column
    path = tmp_path / "metrics.parquet"
    pl.DataFrame({"step": [1, 2], "^.*$": [0.5, 0.25], "^)$": [1.0, 2.0], "loss": [3.0, 4.0]}).write_parquet(path)
    run = load(path)[0]
    assert run.raw["^.*$"].to_list() == [0.5, 0.25] and run.raw["^)$"].to_list() == [1.0, 2.0]
    assert run.raw["loss"].to_list() == [3.0, 4.0] and run.steps.tolist() == [1, 2]
