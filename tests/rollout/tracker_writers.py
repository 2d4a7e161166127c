"""Runs, in a process of their own, the real writers of the tables rollouts are read from:

- veRL's own ``ValidationGenerationsLogger`` (``verl/utils/tracking.py`` of the installed veRL 0.9.1, loaded
  by its file: the module needs only orjson and packaging, while importing the ``verl`` package would pull
  in Ray and tensordict), logging validation generations to W&B (offline), SwanLab (offline), Trackio, MLflow
  (SQLite store) and ClearML (offline) as a veRL trainer configured with those loggers does;
- W&B and Trackio logging a ``Table(dataframe=…)`` of TRL's completion columns under ``completions``, as
  ``GRPOTrainer.log`` does with ``log_completions=True``, beside the ``completions_<step>.parquet`` file
  TRL writes with the same frame.

``python tracker_writers.py OUT`` writes everything under ``OUT``; ``SAMPLES`` and ``COMPLETIONS`` are what
was logged, for the tests to compare with.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

#: (step, [(input, output, score) …]) as veRL's trainer hands them to the logger
SAMPLES: list[tuple[int, list[tuple[str, str, float]]]] = [
    (5, [("计算 1+1？", "答案是 2", 1.0), ("What is 2+2?\nThink first.", "5", 0.0), ("3*3?", "9.", 1.0)]),
    (10, [("计算 1+1？", "2", 1.0), ("What is 2+2?\nThink first.", "4", 1.0), ("3*3?", "6", 0.0)]),
    (15, [("计算 1+1？", "二", 0.5), ("What is 2+2?\nThink first.", "4", 1.0), ("3*3?", "9", 1.0)]),
]


def _chat(role: str, text: str) -> list[dict[str, str]]:
    return [{"role": role, "content": text}]


def completions(step: int) -> dict[str, list[Any]]:
    """TRL's table at ``step``: two prompts, two completions each, two reward functions, advantages."""
    prompts = [_chat("user", "1+1?")] * 2 + [_chat("user", "名字？")] * 2
    answers = [_chat("assistant", t) for t in ("2", f"{step}", "我叫小明", "")]
    return {"step": [step] * 4, "prompt": prompts, "completion": answers,
            "accuracy": [1.0, float(step == 2), 1.0, 0.0], "format_reward": [0.5, 0.0, float("nan"), 0.5],
            "advantage": [0.5, -0.5, 0.25, -0.25]}


COMPLETION_STEPS = (1, 2, 3)


def _verl_logger() -> Any:
    spec = importlib.util.find_spec("verl")
    assert spec is not None and spec.submodule_search_locations
    path = Path(list(spec.submodule_search_locations)[0]) / "utils" / "tracking.py"
    loaded = importlib.util.spec_from_file_location("verl_tracking", path)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module.ValidationGenerationsLogger(project_name="p", experiment_name="val")


def write_verl(out: Path) -> None:
    import mlflow
    import swanlab
    import trackio
    import wandb
    from clearml import Task

    Task.set_offline(offline_mode=True)
    task = Task.init(project_name="p", task_name="val", auto_resource_monitoring=False, auto_connect_frameworks=False,
                     auto_connect_arg_parser=False)

    wandb.init(project="p", name="val", dir=str(out / "verl"))
    swanlab.init(project="p", experiment_name="val", mode="offline", logdir=str(out / "verl" / "swanlog"))
    trackio.init(project="verl", name="val")
    experiment = mlflow.create_experiment("p", artifact_location=str(out / "verl" / "mlartifacts"))
    mlflow.start_run(run_name="val", experiment_id=experiment)
    logger = _verl_logger()
    for step, samples in SAMPLES:
        logger.log(["wandb", "swanlab", "trackio", "mlflow", "clearml"], samples, step)
    task.close()
    wandb.finish()
    swanlab.finish()
    trackio.finish()
    mlflow.end_run()


def write_trl(out: Path) -> None:
    import pandas as pd
    import trackio
    import wandb

    wandb.init(project="p", name="grpo", dir=str(out / "trl"))
    trackio.init(project="trl", name="grpo")
    (out / "trl" / "completions").mkdir(parents=True)
    for step in COMPLETION_STEPS:
        df = pd.DataFrame(completions(step))
        df.to_parquet(out / "trl" / "completions" / f"completions_{step:05d}.parquet")
        for backend in (wandb, trackio):
            backend.log({"train/loss": 0.1 * step})
            backend.log({"completions": backend.Table(dataframe=df)})
    wandb.finish()
    trackio.finish()


if __name__ == "__main__":
    root = Path(sys.argv[1])
    os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_CONSOLE="off", WANDB_DISABLE_GIT="true",
                      WANDB_DISABLE_CODE="true", WANDB_CONFIG_DIR=str(root / ".wandb-config"),
                      WANDB_CACHE_DIR=str(root / ".wandb-cache"), WANDB_DATA_DIR=str(root / ".wandb-data"),
                      TRACKIO_DIR=str(root / "trackio"), MLFLOW_TRACKING_URI=f"sqlite:///{root / 'mlflow.db'}",
                      HOME=str(root / "home"), CLEARML_CACHE_DIR=str(root / "clearml"))
    os.environ.pop("WANDB_API_KEY", None)
    (root / "verl").mkdir(parents=True)
    (root / "home").mkdir()
    write_verl(root)
    write_trl(root)
