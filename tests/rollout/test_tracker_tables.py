"""Rollouts read from the tables a training logged to its tracker, on files the real writers wrote in a
process of their own (:mod:`tracker_writers`): veRL's own validation-generations logger to W&B, SwanLab,
Trackio, MLflow and ClearML, and TRL's completions table to W&B and Trackio. Each is checked value by value against
what was logged (veRL) or against TRL's own completion files read by the completions reader (TRL)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from optional import require

from rlvitals import analyze_rollouts
from rlvitals.cli import main
from rlvitals.errors import EmptyInputError, InputError
from rlvitals.rollout import read_rollouts
from rollout.tracker_writers import COMPLETION_STEPS, SAMPLES

#: these tests run a real tracker SDK (its writer, or its reader for comparison)
pytestmark = pytest.mark.tracker

WRITERS = Path(__file__).with_name("tracker_writers.py")
COLUMNS = ["step", "prompt", "response", "score"]


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require(("wandb", "swanlab", "trackio", "mlflow", "clearml", "verl", "pandas", "pyarrow"),
            "the tracker table tests",
            "pip install 'rlvitals[test]' && pip install --no-deps verl==0.9.1")
    out = tmp_path_factory.mktemp("tables") / "out"
    # as a script given with -c, outside the repository: ClearML would otherwise look into the script's git repo
    done = subprocess.run([sys.executable, "-c", WRITERS.read_text(encoding="utf-8"), str(out)], capture_output=True,
                          text=True, timeout=600, cwd=out.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def _one(root: Path, pattern: str) -> Path:
    found = sorted(root.glob(pattern))
    assert len(found) == 1, found
    return found[0]


def _verl_roots(out: Path) -> dict[str, Path]:
    wandb = _one(out / "verl" / "wandb", "offline-run-*")
    swan = _one(out / "verl" / "swanlog", "run-*")
    mlflow = _one(out / "verl" / "mlartifacts", "*")
    clearml = _one(out / "clearml" / "offline", "offline-*[!p]")
    return {"wandb run": wandb, "wandb file": _one(wandb, "run-*.wandb"), "wandb folder": out / "verl" / "wandb",
            "swanlab run": swan, "swanlab file": _one(swan, "run-*.swanlab"), "trackio db": out / "trackio" / "verl.db",
            "trackio run": Path(f"{out / 'trackio' / 'verl.db'}#val"), "mlflow run": mlflow,
            "mlflow artifacts": mlflow / "artifacts", "clearml session": clearml,
            "clearml zip": clearml.with_name(clearml.name + ".zip")}


def _expected() -> list[tuple[Any, ...]]:
    return sorted((step, q, a, s) for step, samples in SAMPLES for q, a, s in samples)


@pytest.mark.process
def test_verl_generations_read_the_same_from_every_tracker(logged: Path) -> None:
    formats = {}
    for name, root in _verl_roots(logged).items():
        rs = read_rollouts(root)
        table = rs.table
        assert sorted(table.select(COLUMNS).rows()) == _expected(), name
        assert set(table.get_column("split").to_list()) == {"val"}, name
        # one response per validation prompt: each its own group, correctness from the 0/1 score
        assert table.group_by("step", "group").len().get_column("len").to_list() == [1] * len(_expected()), name
        assert table.filter(pl.col("score") == 0.5).get_column("correct").to_list() == [False], name
        assert not rs.skips.count, name
        formats[name] = rs.format
    assert formats == {"wandb run": "wandb-table", "wandb file": "wandb-table", "wandb folder": "wandb-table",
                       "swanlab run": "swanlab-table", "swanlab file": "swanlab-table", "trackio db": "trackio-table",
                       "trackio run": "trackio-table", "mlflow run": "mlflow-table", "mlflow artifacts": "mlflow-table",
                       "clearml session": "clearml-table", "clearml zip": "clearml-table"}


@pytest.mark.process
def test_a_wide_wandb_table_repeating_earlier_rows_is_read_once(logged: Path) -> None:
    """veRL logs W&B a table holding every step so far: three files, the last of all three steps."""
    run = _verl_roots(logged)["wandb run"]
    files = sorted((run / "files" / "media" / "table" / "val").glob("generations_*.table.json"))
    assert len(files) == len(SAMPLES)
    rows = sorted(len(orjson.loads(f.read_bytes())["data"]) for f in files)
    assert rows == [1, 2, 3]  # each table repeats the rows logged before it
    assert read_rollouts(run).table.height == sum(len(s) for _, s in SAMPLES)


def _trl_roots(out: Path) -> dict[str, Path]:
    return {"wandb": _one(out / "trl" / "wandb", "offline-run-*"), "trackio": out / "trackio" / "trl.db"}


def _comparable(df: pl.DataFrame) -> list[tuple[Any, ...]]:
    cols = ["step", "group", "sample", "prompt", "response", "score", "correct", "advantage", "accuracy",
            "format_reward", "prompt_messages"]
    return [tuple(None if isinstance(v, float) and math.isnan(v) else v for v in row)
            for row in df.select(cols).sort("step", "group", "sample").rows()]


@pytest.mark.process
def test_trl_completions_tables_read_as_trls_own_files(logged: Path) -> None:
    files = read_rollouts(logged / "trl")  # TRL's completions_<step>.parquet, the same frames
    assert files.format == "trl-completions"
    assert files.table.height == 4 * len(COMPLETION_STEPS)
    for name, root in _trl_roots(logged).items():
        rs = read_rollouts(root)
        assert rs.format == f"{name}-table"
        assert _comparable(rs.table) == _comparable(files.table), name
        assert rs.notes == files.notes, name
        weighted = read_rollouts(root, reward_weights={"accuracy": 1.0, "format_reward": 2.0})
        assert weighted.table.get_column("score").to_list() == \
            read_rollouts(logged / "trl", reward_weights={"accuracy": 1.0, "format_reward": 2.0}).table.get_column(
                "score").to_list()


@pytest.mark.process
def test_analyze_and_the_command_line_read_a_tracker_run(logged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _trl_roots(logged)["wandb"]
    analysis = analyze_rollouts(run)
    assert analysis.rollouts.table.height == 4 * len(COMPLETION_STEPS)
    assert main(["rollouts", str(run), "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["overall"]["rollouts"] == 4 * len(COMPLETION_STEPS)
    assert main(["rollouts", str(_verl_roots(logged)["swanlab run"])]) == 0
    assert "veRL's validation generations ('val/generations')" in capsys.readouterr().out


@pytest.mark.process
def test_reward_weights_on_validation_generations_are_refused(logged: Path) -> None:
    root = _verl_roots(logged)["trackio run"]
    with pytest.raises(InputError) as e:
        read_rollouts(root, reward_weights=[1.0])
    assert "reward_weights apply to TRL completions" in e.value.text()
    assert "'trackio-table'" in e.value.text()


@pytest.mark.process
def test_a_run_that_logged_no_rollout_table_says_what_it_logged(logged: Path, tmp_path: Path) -> None:
    run = tmp_path / "offline-run-1" / "files" / "media" / "table"
    run.mkdir(parents=True)
    (run / "eval_3_abcdef.table.json").write_text('{"columns": ["name", "value"], "data": [["a", 1]]}')
    with pytest.raises(EmptyInputError) as e:
        read_rollouts(tmp_path / "offline-run-1")
    folder = tmp_path / "offline-run-1"
    assert e.value.text() == (f"{folder}: no rollouts in this run: it logged tables (eval), none of them "
                              "completions or generations; log TRL's completions (log_completions=True) or veRL's "
                              "validation generations (trainer.log_val_generations), or give a rollout dump")
    assert e.value.text("zh") == (f"{folder}：这个运行里没有 rollout：它记录的表（eval）都不是 completions 或生成结果；"
                                  "请记录 TRL 的 completions（log_completions=True）或 veRL 的验证生成结果"
                                  "（trainer.log_val_generations），或给出 rollout 文件")
    (run / "eval_3_abcdef.table.json").unlink()
    with pytest.raises(EmptyInputError) as e:
        read_rollouts(folder)
    assert "it logged no tables;" in e.value.text() and "它没有记录任何表；" in e.value.text("zh")


@pytest.mark.process
def test_a_damaged_table_file_is_a_counted_skip(logged: Path, tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(_trl_roots(logged)["wandb"], run)
    first = sorted((run / "files" / "media" / "table").glob("completions_*.table.json"))[0]
    first.write_bytes(first.read_bytes()[:40])
    rs = read_rollouts(run)
    assert rs.table.height == 4 * (len(COMPLETION_STEPS) - 1)
    assert rs.skips.count == 1
    [reason] = rs.skips.reasons
    assert reason.startswith(f"{first}: the W&B table 'completions' cannot be read (JSONDecodeError")


@pytest.mark.process
def test_a_wandb_folder_of_two_runs_with_tables_asks_for_one(logged: Path, tmp_path: Path) -> None:
    import shutil

    for n in (1, 2):
        shutil.copytree(_trl_roots(logged)["wandb"], tmp_path / "wandb" / f"offline-run-{n}")
    with pytest.raises(InputError) as e:
        read_rollouts(tmp_path / "wandb")
    assert e.value.text() == (f"{tmp_path / 'wandb'}: 2 W&B runs here logged tables (offline-run-1, offline-run-2); "
                              "give one run's folder")
    assert e.value.text("zh") == (f"{tmp_path / 'wandb'}：这里有 2 个 W&B 运行记录了表"
                                  "（offline-run-1, offline-run-2）；请给出其中一个运行的文件夹")


@pytest.mark.process
def test_watch_follows_the_tables_of_a_tracker_run_as_they_come(logged: Path, tmp_path: Path) -> None:
    import shutil

    from rlvitals.watch.rollouts import RolloutFollow

    run = tmp_path / "run"
    shutil.copytree(_trl_roots(logged)["wandb"], run)
    tables = sorted((run / "files" / "media" / "table").glob("completions_*.table.json"),
                    key=lambda p: int(p.name.split("_")[1]))
    last = tables[-1].read_bytes()
    tables[-1].unlink()  # the run before it logged its last table
    follow = RolloutFollow(run)
    assert follow.poll() and sorted(follow.frames) == list(COMPLETION_STEPS[:-1])
    assert not follow.poll()  # nothing new: not read again
    tables[-1].write_bytes(last)
    assert follow.poll() and sorted(follow.frames) == list(COMPLETION_STEPS)
    assert follow.messages == []
    trackio_run = RolloutFollow(Path(f"{logged / 'trackio' / 'trl.db'}#grpo"))  # one run of a database
    assert trackio_run.poll() and sorted(trackio_run.frames) == list(COMPLETION_STEPS)


@pytest.mark.process
def test_a_real_wandb_run_without_tables_is_told_it_logged_none(logged: Path, tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(_trl_roots(logged)["wandb"], run)
    shutil.rmtree(run / "files" / "media" / "table")
    for root in (run, _one(run, "run-*.wandb")):
        with pytest.raises(EmptyInputError) as e:
            read_rollouts(root)
        assert e.value.text().startswith(f"{root}: no rollouts in this run: it logged no tables; log TRL's completions")
