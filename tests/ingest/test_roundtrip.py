"""Round trips through the real writers: metrics of any name and any value, at any steps, written
by the writer a framework uses (``json.dumps`` lines, tensorboardX, polars' CSV and Parquet,
transformers' ``TrainerState.save_to_json``, MLflow's file store), read back by rlvitals, compare equal: every name kept
as written, every value at its step (NaN as NaN, float32 where the format stores float32).
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvitals import load
from rlvitals.ingest.formats.generic_jsonl import STEP_KEYS, WANDB_KEYS
from rlvitals.ingest.formats.trl_state import SUMMARY_KEYS

#: metric names: printable text of every script (control characters are renamed, surrogates are not
#: text), not a step key nor one of W&B's counters (``_wandb``, ``_runtime``), which are not metrics
NAMES = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=24).filter(
    lambda s: s.strip() == s and s.lower() not in {*STEP_KEYS, *WANDB_KEYS, "epoch", "step"}
    and "step" not in s.lower() and "epoch" not in s.lower())
VALUES = st.floats(allow_nan=True, allow_infinity=True)
STEPS = st.lists(st.integers(0, 10**12), min_size=1, max_size=25, unique=True).map(sorted)


#: what a TensorBoard tag may hold (tensorboardX replaces anything else with ``_`` as it writes)
TAGS = st.from_regex(r"[A-Za-z0-9_.][A-Za-z0-9_./-]{0,23}", fullmatch=True).filter(
    lambda s: "step" not in s.lower() and "epoch" not in s.lower())


@st.composite
def tables(draw: st.DrawFn, values: st.SearchStrategy[float] = VALUES,
           names_of: st.SearchStrategy[str] = NAMES) -> tuple[list[int], dict[str, list[float]]]:
    steps = draw(STEPS)
    names = draw(st.lists(names_of, min_size=1, max_size=5, unique_by=str.casefold))
    return steps, {n: draw(st.lists(values, min_size=len(steps), max_size=len(steps))) for n in names}


def _same(got: float | None, want: float) -> bool:
    return got is not None and (got == want or (math.isnan(got) and math.isnan(want)))


def _check(path: Path, steps: list[int], metrics: dict[str, list[float]], fmt: str | None = None,
           cast: type = float) -> None:
    [run] = load(path, fmt)
    assert run.steps.tolist() == steps
    for name, vals in metrics.items():
        assert name in run.raw.columns, (name, run.raw.columns)
        got = run.raw[name].to_list()
        want = [float(cast(v)) for v in vals]
        assert all(_same(g, w) for g, w in zip(got, want, strict=True)), (name, got, want)


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(tables())
def test_json_lines_written_by_json_dumps(table: tuple[list[int], dict[str, list[float]]]) -> None:
    steps, metrics = table
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "metrics.jsonl"
        path.write_text("".join(json.dumps({"step": s, **{n: v[i] for n, v in metrics.items()}}) + "\n"
                                for i, s in enumerate(steps)), encoding="utf-8")
        _check(path, steps, metrics)


@PROPERTY
@given(tables(st.floats(allow_nan=True, allow_infinity=True, width=32), TAGS))
def test_tensorboard_written_by_tensorboardx(table: tuple[list[int], dict[str, list[float]]]) -> None:
    tbx = pytest.importorskip("tensorboardX")
    steps, metrics = table
    with tempfile.TemporaryDirectory() as tmp:
        writer = tbx.SummaryWriter(tmp)
        for i, s in enumerate(steps):
            for n, v in metrics.items():
                writer.add_scalar(n, v[i], global_step=s)
        writer.close()
        _check(Path(tmp), steps, metrics, cast=np.float32)


@PROPERTY
@given(tables())
def test_csv_written_by_polars(table: tuple[list[int], dict[str, list[float]]]) -> None:
    steps, metrics = table
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "metrics.csv"
        pl.DataFrame({"step": steps, **metrics}).write_csv(path)
        _check(path, steps, metrics)


@PROPERTY
@given(tables())
def test_parquet_written_by_polars(table: tuple[list[int], dict[str, list[float]]]) -> None:
    steps, metrics = table
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "metrics.parquet"
        pl.DataFrame({"step": steps, **metrics}).write_parquet(path)
        _check(path, steps, metrics)


@pytest.mark.model  # transformers (the fast inner loop blocks importing it)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(st.floats(allow_nan=False, allow_infinity=False),
              NAMES.filter(lambda s: s not in SUMMARY_KEYS)))  # the end-of-training summary is no step
def test_trainer_state_written_by_transformers(table: tuple[list[int], dict[str, list[float]]]) -> None:
    trainer = pytest.importorskip("transformers.trainer_callback")
    steps, metrics = table
    steps = [s for s in steps if s > 0] or [1]
    metrics = {n: v[-len(steps):] for n, v in metrics.items()}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trainer_state.json"
        state = trainer.TrainerState(global_step=steps[-1], max_steps=steps[-1], log_history=[
            {**{n: v[i] for n, v in metrics.items()}, "step": s} for i, s in enumerate(steps)])
        state.save_to_json(str(path))
        _check(path, steps, metrics)


#: MLflow metric keys: what its file store allows. (W&B's writer is tested with fixed data in
#: test_wandb_offline.py: in a property, the first offline run of a process was at times read before
#: wandb had written its history, which would make the test fail by timing.)
PLAIN_KEYS = st.from_regex(r"[A-Za-z][A-Za-z0-9_/ -]{0,23}", fullmatch=True).filter(
    lambda s: s.strip() == s and "step" not in s.lower() and "epoch" not in s.lower() and "//" not in s
    and not s.endswith("/"))


@pytest.mark.tracker
@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(tables(st.floats(allow_nan=True, allow_infinity=True), PLAIN_KEYS))
def test_mlflow_written_by_mlflow(table: tuple[list[int], dict[str, list[float]]]) -> None:
    mlflow = pytest.importorskip("mlflow")
    steps, metrics = table
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp) / "mlruns"
        mp.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        mp.setenv("MLFLOW_TRACKING_URI", root.as_uri())
        mlflow.set_tracking_uri(root.as_uri())
        mlflow.set_experiment("roundtrip")
        with mlflow.start_run() as run:
            for i, s in enumerate(steps):
                mlflow.log_metrics({n: v[i] for n, v in metrics.items()}, step=s)
        _check(root / run.info.experiment_id / run.info.run_id, steps, metrics)
