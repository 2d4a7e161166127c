"""CSV reader: the real notebook tables, W&B chart exports, generic tables, text and bad cells."""

from __future__ import annotations

import csv
import io
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
from rlvitals.errors import EmptyInputError, InputError
from rlvitals.ingest import csv_table, find_reader


def raw_at(run: rlvitals.Run, key: str, step: int) -> Any:
    return run.raw.filter(pl.col("step") == step)[key].item()


def write(path: Path, text: str) -> Path:
    path.write_text(text, newline="")
    return path


GRPO_OLD = ["Training Loss", "reward", "reward_std", "completion_length", "kl"]
GRPO_NEW = ["Training Loss", "reward", "reward_std", "completions / mean_length", "completions / min_length",
            "completions / max_length", "completions / clipped_ratio", "completions / mean_terminated_length",
            "completions / min_terminated_length", "completions / max_terminated_length", "kl"]

# file stem -> (steps, raw keys, {(key, step): value})
REAL_TABLES: dict[str, tuple[int, list[str], dict[tuple[str, int], float]]] = {
    "Qwen2.5_3B-GRPO": (250, GRPO_OLD, {
        ("reward", 1): 0.125, ("kl", 100): 0.039771, ("Training Loss", 250): 0.0011, ("reward", 250): 0.719375}),
    "Llama3.1_8B-GRPO": (250, GRPO_OLD + [
        "rewards / xmlcount_reward_func", "rewards / soft_format_reward_func",
        "rewards / strict_format_reward_func", "rewards / int_reward_func", "rewards / correctness_reward_func"], {
        ("reward", 1): -0.048, ("reward_std", 100): 1.290994, ("rewards / correctness_reward_func", 250): 1.333333,
        ("completion_length", 250): 291.666687}),
    "Advanced_Llama3_2_3B_GRPO_LoRA": (500, GRPO_OLD + [
        "rewards / match_format_exactly", "rewards / match_format_approximately", "rewards / check_answer",
        "rewards / check_numbers"], {
        ("reward", 1): -0.65625, ("rewards / check_numbers", 100): 1.03125, ("reward", 500): 9.21875,
        ("kl", 500): 0.145031}),
    "gpt_oss_20B_Reinforcement_Learning_2048_Game_BF16": (432, GRPO_NEW + [
        "rewards / function_works / mean", "rewards / function_works / std", "rewards / no_cheating / mean",
        "rewards / no_cheating / std", "rewards / strategy_succeeds / mean", "rewards / strategy_succeeds / std"], {
        ("reward", 1): 2.5, ("kl", 431): 1.897747, ("rewards / strategy_succeeds / std", 432): 0.707107,
        ("completions / clipped_ratio", 2): 0.5}),
    "Qwen2_5_7B_VL_GRPO": (142, GRPO_NEW + [
        "rewards / formatting_reward_func / mean", "rewards / formatting_reward_func / std",
        "rewards / correctness_reward_func / mean", "rewards / correctness_reward_func / std"], {
        ("Training Loss", 1): 0.0302, ("Training Loss", 2): -0.0109, ("completions / max_length", 141): 1024.0,
        ("rewards / correctness_reward_func / std", 142): 1.069045}),
    "Llama3_8B-ORPO": (30, ["Training Loss", "rewards / chosen", "rewards / rejected", "rewards / accuracies",
                            "rewards / margins", "logps / rejected", "logps / chosen", "logits / rejected",
                            "logits / chosen"], {
        ("Training Loss", 1): 5.6962, ("rewards / chosen", 10): -0.212703, ("logits / chosen", 30): -1.028757,
        ("rewards / accuracies", 2): 0.125}),
}


@pytest.mark.parametrize("stem", sorted(REAL_TABLES))
def test_real_notebook_tables(real: Path, stem: str) -> None:
    steps, keys, values = REAL_TABLES[stem]
    path = real / f"trl-unsloth__notebooks__{stem}.training_table.csv"
    assert find_reader(path).format == "csv"
    (run,) = load(path)
    assert (run.format, run.framework) == ("csv", "trl")
    assert run.steps.tolist() == list(range(1, steps + 1))
    assert run.train_steps.tolist() == list(range(1, steps + 1))
    assert run.raw.columns == ["step", *keys]
    assert run.raw.null_count().row(0) == (0,) * len(run.raw.columns)  # every cell was read
    for (key, step), value in values.items():
        assert raw_at(run, key, step) == value, (key, step)
    assert run.skipped.count == 0
    assert all("'reward_std' means different things" in n for n in run.notes)  # only the TRL-version note
    assert run.files == [str(path)]
    assert run.bytes_read == path.stat().st_size


def test_negative_zero_is_read_as_zero(real: Path) -> None:
    (run,) = load(real / "trl-unsloth__notebooks__Llama3.1_8B-GRPO.training_table.csv")
    loss = raw_at(run, "Training Loss", 1)
    assert loss == 0.0 and math.copysign(1.0, loss) == -1.0  # "-0.000000" verbatim


WANDB_EXPORT = (
    '"Step","grpo-a - train/reward","grpo-a - train/reward__MIN","grpo-a - train/reward__MAX",'
    '"grpo b/2 - train/reward","grpo b/2 - train/reward__MIN","grpo b/2 - train/reward__MAX",'
    '"grpo-a - train/kl","grpo-a - train/kl__MIN","grpo-a - train/kl__MAX","grpo-a - _step"\r\n'
    '"1","0.1","0.1","0.1","0.3","0.3","0.3","0.01","0.01","0.01","5"\r\n'
    '"2","0.2","0.15","0.25","","","","","","","9"\r\n'
    '"3","","","","0.5","0.4","0.6","0.03","0.03","0.03","13"\r\n'
)


def test_wandb_export_with_two_runs(tmp_path: Path) -> None:
    path = write(tmp_path / "wandb_export_2026.csv", WANDB_EXPORT)
    assert find_reader(path).format == "csv"
    roots = csv_table.runs(path)
    assert [str(r) for r in roots] == [f"{path}#run=grpo-a", f"{path}#run=grpo b%2F2"]
    assert [csv_table.split_root(r) for r in roots] == [(path, "grpo-a"), (path, "grpo b/2")]
    a, b = load(path)
    assert a.path == f"{path}#run=grpo-a"
    assert a.files == [str(path)] and b.files == [str(path)]
    assert a.raw.columns == ["step", "train/reward", "train/kl"]
    assert b.raw.columns == ["step", "train/reward"]
    assert a.steps.tolist() == [1, 2, 3]  # step 3 has kl only
    assert b.steps.tolist() == [1, 3]  # empty cells are not logged
    assert raw_at(a, "train/reward", 2) == 0.2
    assert raw_at(a, "train/reward", 3) is None
    assert raw_at(a, "train/kl", 2) is None
    assert raw_at(b, "train/reward", 3) == 0.5
    assert any("read run 'grpo-a'" in n and "6 __MIN/__MAX columns were dropped" in n for n in a.notes)
    assert any("read run 'grpo b/2'" in n for n in b.notes)
    assert a.skipped.count == 0 and b.skipped.count == 0


def test_wandb_export_with_one_run_keeps_the_file_as_root(tmp_path: Path) -> None:
    path = write(tmp_path / "one.csv", "Step,run-1 - train/loss,run-1 - train/loss__MIN,run-1 - train/loss__MAX\n"
                                       "10,0.5,0.4,0.6\n20,0.25,0.2,0.3\n")
    assert csv_table.runs(path) == [path]
    (run,) = load(path)
    assert run.path == str(path)
    assert run.raw.columns == ["step", "train/loss"]
    assert run.steps.tolist() == [10, 20]


def test_unknown_run_root_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path / "w.csv", WANDB_EXPORT)
    with pytest.raises(InputError, match=r"no run named 'zzz' in this W&B export; it holds: grpo-a, grpo b/2"):
        list(csv_table.read(Path(f"{path}#run=zzz"), rlvitals.ingest.SourceMeta("csv"), rlvitals.ingest.SkipLog()))


def test_generic_csv_without_step_column(tmp_path: Path) -> None:
    path = write(tmp_path / "table.csv", "loss,reward\n1.0,0.1\n\n0.5,0.2\n0.25,\n")
    assert find_reader(path).format == "csv"
    (run,) = load(path)
    assert run.steps.tolist() == [1, 2, 3]
    assert raw_at(run, "loss", 3) == 0.25
    assert raw_at(run, "reward", 3) is None
    assert any("no step column" in n and "numbered 1, 2, 3" in n for n in run.notes)


def test_cells_text_columns_and_bad_values(tmp_path: Path) -> None:
    path = write(tmp_path / "log.csv", (
        "global_step,loss,kl,phase,note,Validation Loss\n"
        "1,0.5,nan,warmup,,No log\n"
        "2,oops,inf,main,\"two\nlines\",0.9\n"
        "x,0.3,0.1,main,,\n"
        ",0.3,0.1,main,,\n"
        "3.0,-inf,NaN,main,ok,0.8\n"
        "4,0.1,-0.000000\n"
    ))
    (run,) = load(path)
    assert run.steps.tolist() == [1, 2, 3, 4]
    assert run.raw.columns == ["step", "loss", "kl", "Validation Loss"]
    assert math.isnan(raw_at(run, "kl", 1))
    assert raw_at(run, "kl", 2) == math.inf
    assert raw_at(run, "loss", 3) == -math.inf
    assert raw_at(run, "loss", 2) is None  # the bad value was skipped, not NaN
    assert raw_at(run, "Validation Loss", 1) is None  # "No log"
    assert raw_at(run, "Validation Loss", 2) == 0.9
    assert raw_at(run, "kl", 4) == 0.0
    assert run.text == {"phase": {1: "warmup", 2: "main", 3: "main"}, "note": {2: "two\nlines", 3: "ok"}}
    assert run.skipped.reasons == [
        f"{path}:4: value 'oops' for 'loss' is not a number; the value was skipped",
        f"{path}:5: step 'x' is not an integer; the row was skipped",
        f"{path}:6: the step cell is empty; the row was skipped",
    ]


def test_blank_step_cells_of_empty_rows_are_not_counted(tmp_path: Path) -> None:
    path = write(tmp_path / "t.csv", "step,loss\n1,0.5\n,\n2,0.4\n")
    (run,) = load(path)
    assert run.steps.tolist() == [1, 2]
    assert run.skipped.count == 0


@pytest.mark.parametrize(("name", "text", "taken"), [
    ("a.txt", "Step,Training Loss,reward\n1,0.1,0.2\n", True),
    ("a.txt", '"Step","run - loss"\n', True),
    ("a.txt", "\ufeff_step,loss\n", True),
    ("a.log", "loss,reward\n1,2\n", False),
    ("a.csv", "loss,reward\n1,2\n", True),
    ("a.csv", "loss\n1\n", False),
    ("a.log", "(main_task pid=1) step:1 - actor/pg_loss:0.1, critic/kl:0.2\n", False),
    ("a.jsonl", '{"step": 1, "loss": 0.1}\n', False),
])
def test_sniff(tmp_path: Path, name: str, text: str, taken: bool) -> None:
    assert csv_table.sniff(tmp_path / name, text.encode()) is taken


def test_layout() -> None:
    plain = csv_table.layout(["Step", "Training Loss", "rewards / chosen"])
    assert (plain.step, plain.step_name, plain.runs) == (0, "Step", ())
    assert [c.key for c in plain.columns] == ["Training Loss", "rewards / chosen"]
    export = csv_table.layout(["a - x", "Step", "a - x__MIN", "b - x", "b - x__MAX"])
    assert (export.step, export.runs, export.dropped) == (1, ("a", "b"), 2)
    assert [(c.index, c.key, c.run) for c in export.columns] == [(0, "x", "a"), (3, "x", "b")]
    mixed = csv_table.layout(["step", "a - x", "loss"])  # not every column is "<run> - <key>"
    assert mixed.runs == () and [c.key for c in mixed.columns] == ["a - x", "loss"]
    assert csv_table.layout(["iteration", "_step", "loss"]).step == 1


def test_cli_inspect_json_multi_run(tmp_path: Path) -> None:
    path = write(tmp_path / "export.csv", WANDB_EXPORT)
    out, err = io.StringIO(), io.StringIO()
    assert main(["inspect", "--json", str(path)], out=out, err=err) == 0
    reports = [orjson.loads(line) for line in out.getvalue().splitlines()]
    assert [(r["path"], r["format"], r["steps"]) for r in reports] == [
        (f"{path}#run=grpo-a", "csv", 3), (f"{path}#run=grpo b%2F2", "csv", 2)]


cells = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**9), st.lists(cells, min_size=3, max_size=3)),
                min_size=1, max_size=25, unique_by=lambda row: row[0]))
def test_round_trip_of_written_tables(rows: list[tuple[int, list[float | None]]]) -> None:
    keys = ["loss", "rewards / chosen", "kl"]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.csv"
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["Step", *keys])
            for step, values in rows:
                writer.writerow([step, *("" if v is None else repr(v) for v in values)])
        logged = [(step, values) for step, values in rows if any(v is not None for v in values)]
        if not logged:
            with pytest.raises(EmptyInputError):
                load(path)
            return
        (run,) = load(path)
        assert run.steps.tolist() == sorted(step for step, _ in logged)
        for step, values in logged:
            for key, value in zip(keys, values, strict=True):
                got = raw_at(run, key, step) if key in run.raw.columns else None
                if value is None or (isinstance(value, float) and math.isnan(value)):
                    assert got is None if value is None else math.isnan(got)
                else:
                    assert got == value
