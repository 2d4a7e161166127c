"""CONTRIBUTING.md's first recipe, followed end to end: a new check is one TOML record and one function; the
registry joins them, refuses a record without its function (or the words it needs), and the diagnosis reports the
new finding in both languages, with its onset, its numbers and its advice, on a real log."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomllib

import rlvitals
from rlvitals.checks import Outcome, RunView, parse_checks
from rlvitals.diagnosis import diagnose
from rlvitals.errors import CatalogError

#: the corpus's genuine TRL trainings of SmolLM2-135M on the CPU (scripts/captures/trl_cpu_runs.py)
RUNS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
OPENRLHF_RM = Path(__file__).resolve().parents[1] / "ingest" / "data" / "openrlhf" / "rm-0.11.2"

#: step 2 of the recipe: the record, as a contributor writes it into src/rlvitals/checks/<layer>.toml
RECORD = """
[[check]]
id = "entropy_below_floor"
layer = "L2"
needs = ["actor/entropy"]
rule = "entropy-below-floor"
params = { floor = 0.5, min_steps = 5 }
[check.en]
title = "Entropy below a floor"
ok = "actor/entropy stayed above {floor} (lowest {low:.3g})."
warn = "actor/entropy was below {floor} on {steps} steps, first at step {start} (lowest {low:.3g})."
advice = "An example check: a real one says what to change."
[check.zh]
title = "熵低于下限"
ok = "actor/entropy 一直高于 {floor}（最低 {low:.3g}）。"
warn = "actor/entropy 有 {steps} 步低于 {floor}，最早在第 {start} 步（最低 {low:.3g}）。"
advice = "示例检查：真实的检查会说明要改什么。"
"""


def entropy_below_floor(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Step 3 of the recipe: a warning when the entropy stays below ``floor`` for ``min_steps`` steps."""
    s = view.series("actor/entropy")
    if s is None:
        return []  # not logged: the diagnosis says skipped, never ok
    below = np.flatnonzero(s.values < p["floor"])
    values = {"floor": p["floor"], "low": float(s.values.min())}
    if len(below) < p["min_steps"]:
        return [Outcome("ok", "ok", values)]
    start = s.step(int(below[0]))
    return [Outcome("warn", "warn", {**values, "start": start, "steps": len(below)}, onset_step=start,
                    metrics=("actor/entropy",), evidence={"first_below": start})]


def test_a_new_check_is_a_record_and_a_function_and_speaks_both_languages() -> None:
    data = tomllib.loads(RECORD)
    (check,) = parse_checks(data, {"entropy_below_floor": entropy_below_floor})
    run = rlvitals.load(RUNS / "made__trl-cpu__grpo-lr-too-high" / "trainer_state.json")[0]
    (found,) = diagnose(run, checks=[check]).findings
    steps, entropy = run.series("actor/entropy", finite=True)
    below = steps[entropy < 0.5]
    assert found.status == "warn" and found.onset_step == int(below[0]) and found.evidence["first_below"] == below[0]
    assert found.message["en"] == (f"actor/entropy was below 0.5 on {len(below)} steps, first at step {below[0]} "
                                   f"(lowest {entropy.min():.3g}).")
    zh = f"actor/entropy 有 {len(below)} 步低于 0.5，最早在第 {below[0]} 步（最低 {entropy.min():.3g}）。"
    assert found.message["zh"] == zh
    assert found.title == {"en": "Entropy below a floor", "zh": "熵低于下限"}
    # a run that did not log the metric (OpenRLHF's reward-model trainer, run here on a CPU): skipped with what
    # it needed, never ok
    (skipped,) = diagnose(rlvitals.load(OPENRLHF_RM)[0], checks=[check]).findings
    assert skipped.status == "skipped" and "actor/entropy" in skipped.message["en"]


def test_the_registry_refuses_a_record_without_its_function_or_its_words() -> None:
    data = tomllib.loads(RECORD)
    with pytest.raises(CatalogError, match=r"check 'entropy_below_floor' has no function"):
        parse_checks(data, {})
    del data["check"][0]["en"]["advice"]
    with pytest.raises(CatalogError, match=r"needs a title and advice"):
        parse_checks(data, {"entropy_below_floor": entropy_below_floor})


def test_the_registry_refuses_a_record_that_names_no_reading_rule() -> None:
    data = tomllib.loads(RECORD)
    del data["check"][0]["rule"]
    with pytest.raises(CatalogError, match=r"check 'entropy_below_floor' has rule = None; expected the anchor of its "
                                           r"entry in docs/reading-rules\.md"):
        parse_checks(data, {"entropy_below_floor": entropy_below_floor})
    data["check"][0]["rule"] = "Seed-000 §2.3"
    with pytest.raises(CatalogError, match=r"has rule = 'Seed-000 §2\.3'"):
        parse_checks(data, {"entropy_below_floor": entropy_below_floor})

