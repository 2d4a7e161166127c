"""Probing while a run trains (:mod:`rlvitals.probe.periodic`): which steps are due, each step's results merged
into the probe file as ``rlvitals probe`` writes it, and the probing thread that never blocks its caller, drops
the oldest waiting step from a full backlog and says a model that cannot load once.

The model asked is a real one that answers fast: the demo's policy-gradient learner at a checkpoint
(:class:`~rlvitals.synthetic.probed_learner.ProbedLearner`), probed on the rollouts it sampled itself.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from rlvitals.errors import ProbeError
from rlvitals.probe import Chain, PeriodicProbe, ProbeOptions, ProbeWorker, Request, chain_of, due, probe_into
from rlvitals.rollout import PROBES_FILE, read_probe_results
from rlvitals.synthetic.demo import LR, train_step
from rlvitals.synthetic.learner import Learner
from rlvitals.synthetic.probed_learner import DEMO_PROBES, ProbedLearner
from rlvitals.synthetic.word_problems import make_problems
from rlvitals.words import in_lang

OPTIONS = ProbeOptions(probes=DEMO_PROBES)


def _checkpoint() -> tuple[ProbedLearner, list[dict[str, object]]]:
    """The learner after one real training step, and the rollouts it sampled there."""
    problems = make_problems(20, seed=0)
    learner = Learner(problems, seed=0)
    _, records = train_step(learner, problems[:4], 4, LR)
    return ProbedLearner(learner), records


def _chains(records: Sequence[dict[str, object]], step: int) -> list[Chain]:
    return [chain_of(str(r["prompt"]), str(r["response"]), id=f"{step}/{i}", target=str(r["target"]), step=step)
            for i, r in enumerate(records)]


class Gated:
    """A backend that answers only once ``gate`` is set: a probe under way, for as long as the test wants."""

    def __init__(self, backend: ProbedLearner, gate: threading.Event) -> None:
        self.backend, self.gate, self.model = backend, gate, backend.model
        self.asked = threading.Event()  # a probe is under way

    def generate(self, requests: Sequence[Request]) -> list[str]:
        self.asked.set()
        self.gate.wait()
        return self.backend.generate(requests)


def test_due_steps_are_the_multiples_of_every() -> None:
    assert [s for s in range(0, 13) if due(s, 5)] == [5, 10]
    assert not due(3, 0)
    with pytest.raises(ProbeError, match=r"^probe every 0 steps: expected a whole number of steps >= 1"):
        PeriodicProbe(every=0, backend=lambda: Gated)  # type: ignore[arg-type, return-value]


def test_each_step_s_results_are_merged_into_the_probe_file(tmp_path: Path) -> None:
    model, records = _checkpoint()
    path = tmp_path / PROBES_FILE
    first = probe_into(_chains(records, 2), model, path, OPTIONS)
    probe_into(_chains(records, 4), model, path, OPTIONS)
    probe_into(_chains(records[:8], 2), model, path, OPTIONS)  # step 2 probed again: its record is replaced
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["step"], r["rollouts"], r["model"]) for r in lines] == [(2, 8, "demo-learner"),
                                                                       (4, 16, "demo-learner")]
    assert lines[1]["reasoning/faithfulness"] == first["faithfulness"]  # the same rollouts, the same checkpoint
    read = read_probe_results(path)  # what every reader of rollouts joins
    assert read.frame["step"].to_list() == [2, 4] and read.skips.count == 0


def test_the_worker_never_blocks_drops_the_oldest_waiting_step_and_says_so(tmp_path: Path) -> None:
    model, records = _checkpoint()
    gated, written = Gated(model, threading.Event()), list[Path]()
    worker = ProbeWorker(PeriodicProbe(every=2, backend=lambda: gated, options=OPTIONS, backlog=1),
                         tmp_path / PROBES_FILE, on_written=written.append)
    worker.submit(2, lambda: _chains(records, 2))
    assert gated.asked.wait(30)  # step 2 is under way, waiting for the gate
    for step in (4, 6):  # 4 waits, 6 pushes it out
        worker.submit(step, lambda step=step: _chains(records, step))
    assert not worker.wait(0.0) and not worker.idle()
    gated.gate.set()
    assert worker.wait(60)
    said = worker.messages()
    assert worker.probed == [2, 6] and worker.dropped == 1 and written == [tmp_path / PROBES_FILE] * 2
    assert said[0] == ("the probe of step 4 was skipped: 1 probes were already waiting when step 6 was due "
                       "(probing is slower than training: probe less often or fewer rollouts)")
    assert in_lang(said[0], "zh").startswith("跳过了第 4 步的探测：第 6 步到期时已有 1 个探测在排队")
    assert said[1].startswith("probed step 2: 8 rollouts, faithfulness 0.")
    assert in_lang(said[1], "zh").startswith("已探测第 2 步：8 条 rollout，faithfulness 0.")
    worker.submit(2, lambda: _chains(records, 2))  # a step asked for before is not probed again
    assert worker.close(10) == [] and worker.probed == [2, 6] and worker.failures == []


def test_a_model_that_cannot_load_stops_the_probing_once(tmp_path: Path) -> None:
    def no_model() -> ProbedLearner:
        raise ProbeError("/models/x: not a model: give a folder with config.json or a .gguf file")

    worker = ProbeWorker(PeriodicProbe(every=1, backend=no_model), tmp_path / PROBES_FILE)
    worker.submit(1, [])
    assert worker.wait(30)
    worker.submit(2, [])  # nothing more is probed
    assert worker.wait(30) and worker.probed == [] and len(worker.failures) == 1
    assert worker.messages() == worker.failures
    assert worker.failures[0] == ("probing stopped: the probe model could not be loaded (/models/x: not a model: give "
                                  "a folder with config.json or a .gguf file); the run goes on without probes")
    assert in_lang(worker.failures[0], "zh").startswith("探测已停止：无法加载探测模型")
    assert not (tmp_path / PROBES_FILE).exists()
    worker.close(1)
