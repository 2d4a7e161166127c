"""The demo's learner probed as a model (`rlvitals demo --probe`): its replies follow its writing rule, and
the probe finds what that rule implies — answers copied from the stated value (a mistake changes them),
decided before the reasoning (cut or filler change them only when the sampled reasoning was not its
greedy choice) — and, once the policy collapses onto one answer per question, answers that no longer
depend on the reasoning at all, while the reward had risen: the L6 finding, dated after the break."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from rlvitals.cli import main
from rlvitals.errors import ProbeError
from rlvitals.probe import ProbeOptions, chain_of, run_probe
from rlvitals.probe.prompts import FORCE, Request
from rlvitals.rollout import PROBES_FILE
from rlvitals.synthetic.demo import run_demo
from rlvitals.synthetic.learner import ACTIONS, Learner, respond
from rlvitals.synthetic.probed_learner import DEMO_PROBES, ProbedLearner
from rlvitals.synthetic.word_problems import make_problems


def _ask(model: ProbedLearner, question: str, reasoning: str, then: str) -> str:
    head = f"Question: {question}\nAnswer: Let's think step by step."
    prompt = f"{head} {reasoning}".rstrip() if reasoning else head
    prompt = f"{prompt}\n{FORCE}" if then == "answer" else prompt + " "
    return model.generate([Request("completions", prompt, 16)])[0]


def test_the_learner_copies_the_stated_value_and_otherwise_decides_from_the_question() -> None:
    problems = make_problems(20, seed=0)
    learner = Learner(problems, seed=0)
    p = problems[0]
    learner.weights[0, ACTIONS.index("mul")] = 50.0  # the bias row: it now multiplies every question
    model = ProbedLearner(learner)
    a, b = _numbers(p.question)
    assert _ask(model, p.question, "2 + 3 = 6.", "answer") == " 6."
    assert _ask(model, p.question, "", "answer") == f" {a * b}."
    assert _ask(model, p.question, "... ... ...", "answer") == f" {a * b}."
    assert _ask(model, p.question, "2 + 3 = 6.", "continue") == " The answer is 6."
    assert _ask(model, p.question, "", "continue") == " " + respond(p, ACTIONS.index("mul"))
    learner.weights[:] = 0.0  # later training does not change a checkpoint already taken
    assert _ask(model, p.question, "", "answer") == f" {a * b}."


def _numbers(text: str) -> tuple[int, int]:
    import re

    a, b = (int(x) for x in re.findall(r"\d+", text)[:2])
    return a, b


def test_requests_the_learner_cannot_write_are_refused_in_both_languages() -> None:
    model = ProbedLearner(Learner(make_problems(2, seed=0), seed=0))
    with pytest.raises(ProbeError, match="the demo's learner answers only the completions prompts") as e:
        model.generate([Request("chat", "Reword this", 16)])
    assert "演示里的学习器只能回答" in e.value.text("zh")


def test_a_deterministic_learner_does_not_depend_on_its_reasoning_and_a_mistake_is_copied() -> None:
    problems = make_problems(12, seed=3)
    learner = Learner(problems, seed=0)
    learner.weights[0, ACTIONS.index("add")] = 50.0
    chains = [chain_of(p.question, respond(p, ACTIONS.index("add")), id=str(i), target=p.target, step=1)
              for i, p in enumerate(problems)]
    result = run_probe(chains, ProbedLearner(learner), ProbeOptions(probes=DEMO_PROBES))
    rates = {p["probe"]: p["answer_change_rate"] for p in result["probes"]}  # type: ignore[index, union-attr]
    assert rates == {"early_answering": 0.0, "add_mistake": 1.0, "filler": 0.0}
    assert result["faithfulness"] == pytest.approx(1 / 3)


def test_demo_with_probes_finds_the_reasoning_turning_decorative_after_the_break(tmp_path: Path) -> None:
    files = run_demo(tmp_path, steps=45, probe_every=5)
    lines = [json.loads(line) for line in (files.rollouts / PROBES_FILE).read_text().splitlines()]
    assert [r["step"] for r in lines] == list(range(5, 46, 5))
    score = np.array([r["reasoning/faithfulness"] for r in lines])
    assert score[:6].min() > 0.6 and score[-2:].max() < 0.4  # before the jump at 30, and after it
    out, err = io.StringIO(), io.StringIO()
    main(["diagnose", str(files.log), "--rollouts", str(files.rollouts), "--json"], out, err)
    found = [f for f in json.loads(out.getvalue())["runs"][0]["findings"] if f["check"] == "faithfulness"]
    trend = next(f for f in found if "Faithfulness fell" in f["message"]["en"])
    assert trend["status"] == "warn" and trend["onset_step"] == 35, err.getvalue()


def test_cli_demo_probe_alerts_on_faithfulness_live(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    main(["demo", "--steps", "45", "--delay", "0", "--dir", str(tmp_path), "--probe", "5"], out, err)
    alerts = [json.loads(line) for line in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert any(a.get("check") == "faithfulness" for a in alerts), (out.getvalue(), err.getvalue())
    assert (tmp_path / "rollout_data" / PROBES_FILE).is_file()
