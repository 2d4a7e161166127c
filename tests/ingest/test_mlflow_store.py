"""MLflow stores written by the real mlflow client (file store and SQLite), read without it."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import rlvitals
from rlvitals import load
from rlvitals.errors import InputError
from rlvitals.ingest import find_reader, mlflow_store
from rlvitals.ingest.record import SkipLog, SourceMeta
from rlvitals.words import in_lang

from .specials import DEADLINE, load_in_child, plant

#: these tests run a real tracker SDK (its writer, or its reader for comparison)
pytestmark = pytest.mark.tracker

mlflow = pytest.importorskip("mlflow")

PROFILING = "profiling/Time taken: GRPOTrainer._prepare_inputs"
VAL = "val-core/openai/gsm8k/reward/mean_at_4"  # veRL's MLflow adapter writes @ as _at_


def _log_runs(uri: str) -> dict[str, str]:
    """A veRL-like run, a TRL-like run, a deleted run and a run with params only."""
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("grpo gsm8k")
    ids = {}
    with mlflow.start_run(run_name="verl-like") as run:
        ids["verl"] = run.info.run_id
        mlflow.log_params({"algorithm/adv_estimator": "grpo", "data/train_batch_size": 8})
        for step in range(1, 6):
            metrics = {"actor/pg_loss": step / 7, "critic/score/mean": -step * 1e-3,
                       "actor/entropy": math.nan if step == 2 else math.inf if step == 3 else 1 / step}
            if step % 2 == 0:
                metrics[VAL] = step / 10
            mlflow.log_metrics(metrics, step=step)
        mlflow.log_metric("actor/pg_loss", 99.0, step=5)  # logged twice at one step
    with mlflow.start_run(run_name="trl-like") as run:
        ids["trl"] = run.info.run_id
        for step in (10, 20):
            mlflow.log_metrics({"loss": step / 100, PROFILING: 0.25, "eval_loss": 1 / step}, step=step)
    with mlflow.start_run(run_name="deleted") as run:
        ids["deleted"] = run.info.run_id
        mlflow.log_metric("loss", 1.0, step=1)
    mlflow.delete_run(ids["deleted"])
    with mlflow.start_run(run_name="params-only") as run:
        ids["params"] = run.info.run_id
        mlflow.log_param("note", "nothing logged")
    return ids


@pytest.fixture(scope="module")
def file_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    root = tmp_path_factory.mktemp("mlflow") / "mlruns"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        mp.setenv("MLFLOW_TRACKING_URI", root.as_uri())
        ids = _log_runs(root.as_uri())
    yield root, ids


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("alembic")
    db = tmp_path_factory.mktemp("mlflow_sql") / "mlflow.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
        ids = _log_runs(f"sqlite:///{db}")
    yield db, ids


def at(run: rlvitals.Run, key: str, step: int) -> Any:
    return run.raw.filter(pl.col("step") == step)[key].item()


def _check_verl(run: rlvitals.Run) -> None:
    assert run.steps.tolist() == [1, 2, 3, 4, 5]
    assert run.raw["actor/pg_loss"].to_list() == [1 / 7, 2 / 7, 3 / 7, 4 / 7, 99.0]
    assert any("logged twice" in n for n in run.notes)
    assert run.raw["critic/score/mean"].to_list() == [-s * 1e-3 for s in range(1, 6)]
    assert math.isnan(at(run, "actor/entropy", 2)) and at(run, "actor/entropy", 3) == math.inf
    assert at(run, "actor/entropy", 4) == 0.25
    assert run.raw.select("step", VAL).drop_nulls().rows() == [(2, 0.2), (4, 0.4)]
    assert run.config == {"algorithm.adv_estimator": "grpo", "data.train_batch_size": "8"}
    assert any("MLflow run 'verl-like'" in n and "experiment 'grpo gsm8k'" in n for n in run.notes)


def _check_trl(run: rlvitals.Run) -> None:
    assert run.steps.tolist() == [10, 20]
    assert run.raw["loss"].to_list() == [0.1, 0.2]
    assert run.raw[PROFILING].to_list() == [0.25, 0.25]
    assert run.raw["eval_loss"].to_list() == [0.1, 0.05]


def test_file_store_root_experiment_and_run_folders(file_store: tuple[Path, dict[str, str]]) -> None:
    root, ids = file_store
    experiment = next(p.parent for p in root.glob("*/" + ids["verl"]))
    for path in (root, experiment, experiment / ids["verl"]):
        assert find_reader(path).format == "mlflow"
    verl, trl = load(root)  # the deleted run and the run without metrics are left out
    assert [Path(verl.path).name, Path(trl.path).name] == [ids["verl"], ids["trl"]]
    _check_verl(verl)
    _check_trl(trl)
    assert verl.skipped.count == 0 and trl.skipped.count == 0
    assert [Path(r.path).name for r in load(experiment)] == [ids["verl"], ids["trl"]]
    [one] = load(experiment / ids["trl"])
    _check_trl(one)


def test_file_store_keys_are_nested_paths_with_spaces_and_colons(file_store: tuple[Path, dict[str, str]]) -> None:
    root, ids = file_store
    run_dir = next(root.glob("*/" + ids["trl"]))
    assert (run_dir / "metrics" / "profiling" / "Time taken: GRPOTrainer._prepare_inputs").is_file()
    assert (next(root.glob("*/" + ids["verl"])) / "metrics" / "val-core" / "openai").is_dir()


def test_bad_lines_in_a_metric_file_are_counted(file_store: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    import shutil

    root, ids = file_store
    run_dir = tmp_path / "0" / ids["trl"]
    shutil.copytree(next(root.glob("*/" + ids["trl"])), run_dir)
    metric = run_dir / "metrics" / "loss"
    metric.write_text(metric.read_text() + "1795940196064 not-a-number 30\njunk\n1795940196064 0.5 40\n")
    [run] = load(run_dir)
    assert run.skipped.count == 2
    assert run.skipped.reasons[0].startswith(f"{metric}:3: expected 'timestamp value step' numbers")
    assert run.skipped.reasons[1].startswith(f"{metric}:4: expected 'timestamp value step', got 'junk'")
    assert at(run, "loss", 40) == 0.5


def test_sqlite_store_one_run_per_run_uuid(sqlite_store: tuple[Path, dict[str, str]]) -> None:
    db, ids = sqlite_store
    assert find_reader(db).format == "mlflow"
    assert mlflow_store.runs(db) == [Path(f"{db}#{ids['verl']}"), Path(f"{db}#{ids['trl']}")]
    verl, trl = load(db)
    assert verl.path == f"{db}#{ids['verl']}" and verl.files == [str(db)]
    _check_verl(verl)
    _check_trl(trl)


def test_sqlite_store_read_without_a_run_id(sqlite_store: tuple[Path, dict[str, str]]) -> None:
    db, _ = sqlite_store
    with pytest.raises(InputError, match="holds several runs; read it with load"):
        list(mlflow_store.read(db, SourceMeta("mlflow"), SkipLog()))


def test_sqlite_nan_and_inf_are_stored_as_mlflow_documents(sqlite_store: tuple[Path, dict[str, str]]) -> None:
    db, ids = sqlite_store
    con = sqlite3.connect(db)
    rows = dict(con.execute("SELECT step, value FROM metrics WHERE key='actor/entropy' AND run_uuid=? "
                            "AND step IN (2, 3)", (ids["verl"],)).fetchall())
    nan_flag = con.execute("SELECT is_nan FROM metrics WHERE key='actor/entropy' AND step=2").fetchone()[0]
    con.close()
    assert rows == {2: 0.0, 3: 1.7976931348623157e308} and nan_flag == 1  # mapped back to nan / inf above


def test_a_sqlite_file_that_is_not_mlflow(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE metrics (name TEXT)")
    con.commit()
    con.close()
    assert not mlflow_store.sniff(db, db.read_bytes()[:100])
    not_sql = tmp_path / "x.db"
    not_sql.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    assert not mlflow_store.sniff(not_sql, not_sql.read_bytes())


def test_meta_yaml_is_read_without_a_yaml_parser(tmp_path: Path) -> None:
    f = tmp_path / "meta.yaml"
    f.write_text("artifact_uri: file:///x/artifacts\nexperiment_id: '12'\nrun_name: grpo run: 2\n"
                 "tags: []\nnested:\n  inner: 1\nempty: ''\n")
    assert mlflow_store.meta_yaml(f) == {"artifact_uri": "file:///x/artifacts", "experiment_id": "12",
                                         "run_name": "grpo run: 2", "tags": "[]", "nested": "", "empty": ""}


def test_text_that_is_not_utf8_in_a_damaged_store_is_read_with_a_replacement(
        sqlite_store: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """A damaged MLflow store can hold TEXT that is not UTF-8; sqlite3 raised UnicodeDecodeError (not an
    sqlite3.Error) and the whole read died."""
    import shutil

    db, ids = sqlite_store
    copy = tmp_path / "mlflow.db"
    shutil.copy(db, copy)
    con = sqlite3.connect(copy)
    con.execute("UPDATE metrics SET key = CAST(X'6c6f7373ff' AS TEXT) WHERE key = 'loss' AND run_uuid = ?",
                (ids["trl"],))
    con.commit()
    con.close()
    run = next(r for r in rlvitals.load(copy) if r.path.endswith(ids["trl"]))
    assert "loss\ufffd" in run.raw.columns and run.train_steps.tolist() == [10, 20]



def _mlflow_clock(uri: str, run_id: str) -> tuple[dict[int, float], float]:
    """The latest timestamp of each step over every metric of the run, and its start time, in seconds,
    as MLflow's own client reads them back."""
    client = mlflow.tracking.MlflowClient(uri)
    run = client.get_run(run_id)
    latest: dict[int, float] = {}
    for key in run.data.metrics:
        for point in client.get_metric_history(run_id, key):
            latest[point.step] = max(latest.get(point.step, 0.0), point.timestamp / 1000)
    return latest, run.info.start_time / 1000


def _check_clock(run: rlvitals.Run, latest: dict[int, float], start: float) -> None:
    assert run.wall is not None and run.wall.source == "MLflow timestamp" and run.wall.epoch
    steps, seconds = run.wall_times
    assert steps.tolist() == sorted(latest) and seconds.tolist() == [latest[s] for s in sorted(latest)]
    assert run.wall.started == start and start <= seconds[0]


def test_file_store_clock_is_mlflows_timestamps(file_store: tuple[Path, dict[str, str]],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    root, ids = file_store
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    verl, trl = load(root)
    _check_clock(verl, *_mlflow_clock(root.as_uri(), ids["verl"]))
    _check_clock(trl, *_mlflow_clock(root.as_uri(), ids["trl"]))


def test_sqlite_store_clock_is_mlflows_timestamps(sqlite_store: tuple[Path, dict[str, str]]) -> None:
    db, ids = sqlite_store
    verl, trl = load(db)
    _check_clock(verl, *_mlflow_clock(f"sqlite:///{db}", ids["verl"]))
    _check_clock(trl, *_mlflow_clock(f"sqlite:///{db}", ids["trl"]))


# --- FIFOs and devices inside a store --------------------------------------------------------------------------


def test_a_fifo_or_a_device_among_a_runs_files_is_counted_and_never_opened(
        file_store: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """A FIFO and links to /dev/zero and /dev/urandom among a run's metric files and params hung every command
    and ``serve`` (a FIFO waits for a writer, a device never ends): each is now a counted skip naming it, in a
    child process with a deadline so a regression fails instead of hanging the suite."""
    import shutil
    import threading

    from rlvitals.server import ServeState, Workspace

    root, ids = file_store
    store = tmp_path / "mlruns"
    shutil.copytree(root, store, symlinks=True)
    run_dir = next(store.glob("*/" + ids["verl"]))
    planted = [plant(run_dir / "metrics" / "pipe", "fifo"), plant(run_dir / "metrics" / "actor" / "zero", "zero"),
               plant(run_dir / "params" / "random", "urandom")]
    got = load_in_child(store)
    assert "error" not in got, got
    verl = next(r for r in got["runs"] if r["path"].endswith(ids["verl"]))
    assert verl["steps"] == 5 and verl["skipped"] == 3
    assert sorted(verl["reasons"]) == sorted([f"{planted[0]}: a FIFO, not a log file; it was not opened",
                                              f"{planted[1]}: a device, not a log file; it was not opened",
                                              f"{planted[2]}: a device, not a log file; it was not opened"])
    assert verl["config"]["algorithm.adv_estimator"] == "grpo"  # the other params are read
    [run] = load(run_dir)  # in this process too, now it cannot hang: the reasons keep their Chinese
    assert sorted(in_lang(r, "zh") for r in run.skipped.reasons)[0] == (
        f"{planted[1]}: 这是一个设备文件，不是日志文件；没有打开它")
    ws = Workspace([store], ServeState(tmp_path / "serve.sqlite"))
    scan = threading.Thread(target=ws.poll_once, daemon=True)  # serve reads the same store
    scan.start()
    scan.join(DEADLINE)
    assert not scan.is_alive(), "serve blocked on a FIFO or a device inside the store"
    assert {s["last_step"] for s in ws.summaries()} == {5, 20}
    ws.close()


def test_an_experiment_whose_meta_yaml_is_a_fifo_is_named_by_its_folder(
        file_store: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    import shutil

    root, ids = file_store
    experiment = tmp_path / "exp"
    shutil.copytree(next(root.glob("*/" + ids["trl"])), experiment / ids["trl"])
    meta = plant(experiment / "meta.yaml", "fifo")
    got = load_in_child(experiment / ids["trl"])
    [run] = got["runs"]
    assert run["steps"] == 2 and run["reasons"] == [f"{meta}: a FIFO, not a log file; it was not opened"]
    assert f"MLflow run 'trl-like' (id {ids['trl']}, experiment 'exp')" in run["notes"]


def test_a_run_folder_linked_into_the_store_again_is_one_run(file_store: tuple[Path, dict[str, str]],
                                                             tmp_path: Path) -> None:
    """A run folder reached through a link too (an experiment folder linking to another's run) was read, and
    listed, twice."""
    import shutil

    root, ids = file_store
    store = tmp_path / "mlruns"
    shutil.copytree(root, store, symlinks=True)
    run_dir = next(store.glob("*/" + ids["verl"]))
    (run_dir.parent / "linked-run").symlink_to(run_dir.name)
    assert len(mlflow_store.runs(store)) == 3  # the reader's own listing holds it twice
    assert [Path(r.path).name for r in load(store)] == [ids["verl"], ids["trl"]]


def test_a_start_time_python_cannot_convert_is_no_start_time(file_store: tuple[Path, dict[str, str]],
                                                             tmp_path: Path) -> None:
    """Found by the fuzzer: a run's ``start_time`` of 5,000 digits (Python refuses to convert it) raised
    ValueError while the store's runs were ordered; it is read as no start time, as any other that is no
    number."""
    import re
    import shutil

    root, ids = file_store
    store = tmp_path / "mlruns"
    shutil.copytree(root, store)
    meta = next(store.glob("*/" + ids["verl"])) / "meta.yaml"
    meta.write_text(re.sub(r"(?m)^start_time: .*$", "start_time: " + "9" * 5000, meta.read_text()))
    verl, trl = load(store)
    assert [Path(verl.path).name, Path(trl.path).name] == [ids["verl"], ids["trl"]]  # ordered as if it had none
    assert verl.wall is not None and verl.wall.started is None and len(verl.steps) == 5
