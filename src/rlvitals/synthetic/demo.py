"""``rlvitals demo``: a small real RL run on CPU, watched live, that breaks on purpose partway.

The learner is a softmax policy over five ways to answer an arithmetic word problem (add, subtract
or multiply its two numbers, or repeat one of them), whose logits are a linear function of the
question's words. It is trained by GRPO-style policy gradient: each step samples ``group``
answers for each of ``prompts`` problems, scores them with the exact-answer extractor
(:func:`rlvitals.synthetic.word_problems.extract_answer`), normalises rewards within each group
(``(r - mean) / (std + 1e-4)``) and takes one gradient step. It really learns which words mean
which operation ("more" → add, "each" → multiply...) and so solves held-out problems too. No
number here is simulated: every logged value is measured on the learner.

The pathology: at ``jump_at`` the learning rate jumps ``jump``-fold (a scheduler bug, a wrong
config on resume). The next update is huge and overshoots: words shared by every question type
("has", "how", "many", the names) drag some types onto a wrong operation, and the policy turns
deterministic in one step — an **entropy collapse** with a KL spike. Every rollout of a group is
then the same, so every group's reward has zero variance, GRPO's advantage is zero and nothing can
pull the policy back: the gradient vanishes and a third of the prompts stay wrong for good. The
watcher reports it live (KL jump, zero-variance groups, advantage and gradient collapse,
diversity collapse, entropy). The mechanism is a too-large step, not the data.

Files, written the way veRL writes them so that ``watch`` follows them with zero code:
``<dir>/rlvitals_demo/arith_pg.jsonl`` (the ``file`` logger: ``{"step", "data"}`` lines with
veRL's metric names) and ``<dir>/rollout_data/<step>.jsonl`` (``trainer.rollout_data_dir``).

>>> import tempfile
>>> files = run_demo(Path(tempfile.mkdtemp()), steps=3)
>>> files.log.name, sorted(p.name for p in files.rollouts.iterdir())
('arith_pg.jsonl', ['1.jsonl', '2.jsonl', '3.jsonl'])
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson

from ..rollout.writers import write_verl_dump
from .learner import ACTIONS, Learner, respond
from .word_problems import Problem, extract_answer, make_problems

__all__ = ["DemoFiles", "demo_files", "run_demo", "train_step", "watch_demo"]

STD_EPS = 1e-4  # added to a group's std before dividing, as TRL and veRL do
CLIP = 0.2  # the PPO clip range the clip fraction is measured against
VAL_EVERY = 5
#: the learning rate, and the step from which it is JUMP times larger (measured: without the jump the
#: run stays healthy for 60 steps, reward 0.17 -> ~0.45; with it the policy freezes within two steps)
LR, JUMP, JUMP_AT = 0.02, 5000.0, 30


@dataclass(frozen=True)
class DemoFiles:
    """Where the demo writes: the veRL-style JSONL log and the rollout dump folder."""

    log: Path
    rollouts: Path


def demo_files(folder: Path) -> DemoFiles:
    """The demo's paths inside ``folder`` (veRL's default layout ``<project>/<experiment>.jsonl``).

    Example:
        >>> demo_files(Path("d")).log.as_posix()
        'd/rlvitals_demo/arith_pg.jsonl'
    """
    return DemoFiles(folder / "rlvitals_demo" / "arith_pg.jsonl", folder / "rollout_data")


def _entropy(p: np.ndarray) -> float:
    return float(-(p * np.log(np.clip(p, 1e-12, None))).sum())


def _sample(learner: Learner, batch: Sequence[Problem], group: int) -> tuple[list[dict[str, Any]], list[Any]]:
    records, draws = [], []
    for problem in batch:
        feats = learner.features(problem.question)
        p = learner.probs(feats)
        acts = learner.rng.choice(len(ACTIONS), size=group, p=p)
        rewards = np.array([float(extract_answer(respond(problem, int(a))) == problem.target) for a in acts])
        adv = (rewards - rewards.mean()) / (rewards.std(ddof=1) + STD_EPS)
        draws.append((feats, p, acts, adv))
        for a, r in zip(acts, rewards, strict=True):
            text = respond(problem, int(a))
            records.append({"prompt": problem.question, "response": text, "score": float(r), "target": problem.target,
                            "correct": bool(r), "answer": extract_answer(text)})
    return records, draws


def train_step(learner: Learner, batch: Sequence[Problem], group: int, lr: float) -> tuple[dict[str, float],
                                                                                          list[dict[str, Any]]]:
    """Sample, score, take one policy-gradient step; the step's metrics (veRL's names) and rollouts."""
    records, draws = _sample(learner, batch, group)
    grad = np.zeros_like(learner.weights)
    n = sum(len(acts) for _, _, acts, _ in draws)
    for feats, p, acts, adv in draws:
        for a, A in zip(acts, adv, strict=True):
            g = -p.copy()
            g[a] += 1.0  # d log pi(a) / d logits
            grad[feats] += A * g / n
    old = learner.weights.copy()
    learner.weights = old + lr * grad
    ratios, kl, ent = [], [], []
    for feats, p, acts, _ in draws:
        q = np.clip(learner.probs(feats), 1e-300, None)  # a probability that underflowed to 0 stays finite
        ratios.extend(q[acts] / p[acts])
        kl.extend(np.log(p[acts]) - np.log(q[acts]))
        ent.append(_entropy(p))
    ratios_ = np.array(ratios)
    scores = np.array([r["score"] for r in records])
    advs = np.concatenate([adv for *_, adv in draws])
    metrics = {
        "actor/entropy": float(np.mean(ent)), "actor/pg_clipfrac": float(np.mean(np.abs(ratios_ - 1) > CLIP)),
        "actor/ppo_kl": float(np.mean(kl)), "actor/grad_norm": float(np.linalg.norm(grad)), "actor/lr": lr,
        "actor/pg_loss": float(-(advs * np.log(np.clip(ratios_, 1e-12, None))).mean()),
        "critic/score/mean": float(scores.mean()), "critic/score/max": float(scores.max()),
        "critic/score/min": float(scores.min()), "critic/rewards/mean": float(scores.mean()),
        "critic/advantages/mean": float(advs.mean()), "critic/advantages/max": float(advs.max()),
        "critic/advantages/min": float(advs.min()),
        "response_length/mean": float(np.mean([len(r["response"].split()) for r in records])),
    }
    return metrics, records


def _validate(learner: Learner, problems: Sequence[Problem]) -> float:
    """Accuracy on held-out problems at temperature 1 (veRL's ``mean@1``), computed exactly: the
    probability the policy gives to the answers that are right, averaged over the problems."""
    acc = []
    for p in problems:
        right = [extract_answer(respond(p, a)) == p.target for a in range(len(ACTIONS))]
        acc.append(float(learner.probs(learner.features(p.question))[right].sum()))
    return float(np.mean(acc))


def run_demo(folder: Path, *, steps: int = 60, jump_at: int | None = JUMP_AT, jump: float = JUMP, lr: float = LR,
             prompts: int = 16, group: int = 8, seed: int = 0, delay: float = 0.0,
             on_step: Callable[[int], None] | None = None, stop: threading.Event | None = None,
             probe_every: int | None = None) -> DemoFiles:
    """Train for ``steps`` steps, writing the log and the rollout dumps as it goes; ``on_step`` is
    called after each step is on disk (the test drives a watcher with it), ``delay`` seconds pass
    between steps (so a person can watch); training ends early once ``stop`` is set. With
    ``probe_every`` the learner is probed at every such step, on that step's rollouts, as a checkpoint
    (:mod:`.probed_learner`), and ``rollout_data/rlvitals-probes.jsonl`` is rewritten with the results so far.
    """
    from ..probe.periodic import due  # the one rule of which steps are probed (watch and the TRL callback's too)

    stop = stop or threading.Event()
    files = demo_files(folder)
    files.log.parent.mkdir(parents=True, exist_ok=True)
    train = make_problems(200, seed=seed)
    held_out = make_problems(100, seed=seed + 1)
    learner = Learner(train, seed)
    order = np.random.default_rng(seed + 2)
    with files.log.open("ab") as log:
        for step in range(1, steps + 1):
            if stop.is_set():
                break
            rate = lr * (jump if jump_at is not None and step >= jump_at else 1.0)
            batch = [train[i] for i in order.choice(len(train), size=prompts, replace=False)]
            metrics, records = train_step(learner, batch, group, rate)
            metrics["training/global_step"] = float(step)
            if step % VAL_EVERY == 0 or step == steps:
                metrics["val-core/arith/one_step/acc/mean@1"] = _validate(learner, held_out)
            write_verl_dump(records, files.rollouts, step)  # the dump first: veRL dumps before it logs
            if probe_every and due(step, probe_every):
                _probe_checkpoint(learner, records, step, files.rollouts)
            log.write(orjson.dumps({"step": step, "data": metrics}) + b"\n")
            log.flush()
            if on_step is not None:
                on_step(step)
            if delay:
                stop.wait(delay)
    return files


def _probe_checkpoint(learner: Learner, records: Sequence[dict[str, Any]], step: int, folder: Path) -> None:
    """Probe the learner as it is now on ``records`` (this step's rollouts, one per group) and merge the step's
    results into the probe results file beside the dumps (:func:`rlvitals.probe.periodic.probe_into`: what
    ``watch --probe-every`` and the TRL callback's ``probe_every`` do, here in the training thread, since the
    checkpoint is the learner as it is now)."""
    from ..probe import ProbeOptions, chain_of
    from ..probe.periodic import probe_into
    from ..rollout import PROBES_FILE
    from .probed_learner import DEMO_PROBES, ProbedLearner

    chains = [chain_of(r["prompt"], r["response"], id=f"{step}/{i}", target=r["target"], step=step)
              for i, r in enumerate(records)]
    probe_into(chains, ProbedLearner(learner), folder / PROBES_FILE, ProbeOptions(probes=DEMO_PROBES),
               max_rollouts=len(chains))


def _opening(steps: int, files: DemoFiles, folder: Path, lang: str) -> str:
    """The demo's first lines: what trains, for how long, when it breaks, and where it writes."""
    if lang == "zh":
        jump = f"第 {JUMP_AT} 步时学习率会突然放大 {JUMP:g} 倍" if steps >= JUMP_AT else "学习率不会突变"
        return (f"rlvitals 演示：一个用策略梯度学做算术题的小模型，训练 {steps} 步；{jump}。\n"
                f"  日志：{files.log}\n  rollout 数据：{files.rollouts}\n  告警：{folder / 'alerts.jsonl'}\n")
    jump = f"the learning rate jumps {JUMP:g}x at step {JUMP_AT}" if steps >= JUMP_AT else "no learning-rate jump"
    return (f"rlvitals demo: a policy-gradient learner on arithmetic problems, {steps} steps; {jump}.\n"
            f"  log: {files.log}\n  rollouts: {files.rollouts}\n  alerts: {folder / 'alerts.jsonl'}\n")


class _Pace:
    """When the demo's watcher looks: every ``interval`` seconds on the real clock, or in ``lockstep`` once per
    step the trainer wrote (the trainer waits for the look) on a clock that moves one second per look."""

    def __init__(self, lockstep: bool, interval: float, stop: threading.Event) -> None:
        self.lockstep, self.interval, self.stop = lockstep, interval, stop
        self.first = threading.Event()  # the first step is on disk: the watcher starts on files that are there
        self._written, self._looked = threading.Semaphore(0), threading.Semaphore(0)
        self.start, self.looks = time.time(), 0

    def clock(self) -> float:
        return self.start + self.looks if self.lockstep else time.time()

    def written(self, _: int) -> None:
        """The trainer wrote a step (in lockstep: it waits here until the watcher has looked at it)."""
        self.first.set()
        if self.lockstep:
            self._written.release()
            while not (self._looked.acquire(timeout=0.05) or self.stop.is_set()):
                pass

    def last(self, watcher: Any) -> None:
        """The look after the trainer stopped: the last steps, however recent the look before."""
        self.looks += 1
        watcher.cycle(force=True)

    def look(self, watcher: Any, done: threading.Event) -> None:
        """One turn of the watcher: a look, then a wait for the next one's time (or the next step)."""
        if not self.lockstep:
            watcher.cycle()
            done.wait(self.interval)
        elif self._written.acquire(timeout=0.05):
            self.looks += 1
            watcher.cycle(force=True)
            self._looked.release()


def watch_demo(folder: Path, *, steps: int = 60, delay: float = 0.5, out: IO[str], err: IO[str],
               interval: float = 0.5, stop: threading.Event | None = None, lang: str = "en",
               probe_every: int | None = None, lockstep: bool = False) -> int:
    """Train in a thread while a watcher follows the log and the rollouts in this one and prints
    its alerts (also appended to ``<folder>/alerts.jsonl``); returns 1 when the run ends with a
    failing verdict, as ``watch --exit-on fail`` would. Setting ``stop`` ends training and watching
    early; both threads are joined before this returns (none is left inside native code at exit).
    ``lang``: the language of what it prints (its opening lines, the watcher's lines and alerts);
    ``probe_every``: probe the learner every that many steps (:func:`run_demo`). ``lockstep``: the trainer
    waits after each step until the watcher has diagnosed it, so the watcher looks once per step whatever the
    machine's load, on a clock that moves one second per look from the start (what it says then does not depend on
    how the two threads happen to be scheduled, nor on how long a look takes)."""
    from ..watch.sinks import JsonlSink
    from ..watch.watcher import WatchOptions, open_watcher

    files = demo_files(folder)
    done = threading.Event()
    stop = stop or threading.Event()
    failure: list[BaseException] = []
    pace = _Pace(lockstep, interval, stop)

    def train() -> None:
        try:
            run_demo(folder, steps=steps, delay=delay, stop=stop, on_step=pace.written, probe_every=probe_every)
        except BaseException as exc:  # noqa: BLE001 (shown to the user once the watcher stops)
            failure.append(exc)
        finally:
            done.set()

    out.write(_opening(steps, files, folder, lang))
    thread = threading.Thread(target=train, name="rlvitals-demo-train", daemon=True)
    thread.start()
    while not (pace.first.wait(0.05) or done.is_set()):
        pass
    try:
        watcher = open_watcher([files.log], [JsonlSink(folder / "alerts.jsonl", name="jsonl")],
                               folder / "watch.sqlite", WatchOptions(interval=interval, min_gap=0.5, lang=lang),
                               out=out, err=err, rollouts=files.rollouts, clock=pace.clock)
    except BaseException:  # no watcher (a bad state file): training is stopped, not left running
        stop.set()
        thread.join()
        raise
    try:
        while not done.is_set() and not stop.is_set():
            pace.look(watcher, done)
        if not stop.is_set():
            pace.last(watcher)
            watcher.ended()  # the trainer stopped: no later look can take back what waits
        watcher.view.close()
    finally:
        stop.set()
        thread.join()
        watcher.close()
    if failure:
        raise failure[0]
    return int(any(d.verdict == "fail" for d in watcher.diagnoses.values()))
