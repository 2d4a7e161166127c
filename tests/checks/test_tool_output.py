"""``tool_output_ignored`` (docs/reading-rules.md#after-tool-response) on the real veRL multi-turn dump
(tests/rollout/data/verl-gsm8k-multiturn-hecate: 1,024 SGLang rollouts with a GSM8K reward tool, Qwen's template)
cut into 8 steps of 128: unedited, the reasoning after each tool response reads it and the check is quiet;
constructed — the policy's own text, with the reasoning after each tool response replaced from step 5 by a
sentence that uses none of the response's words — it warns from there. The reasoning after the responses
shrinking alone, on series built to show it (every template: tests/checks/test_rollout.py's cases)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runs import finding, make_run

from checks.test_rollout import base_log, diagnosed, write_dump
from rlvitals.diagnosis import diagnose
from rlvitals.rollout.readers import read_rollouts

HECATE = Path(__file__).resolve().parents[1] / "rollout" / "data" / "verl-gsm8k-multiturn-hecate"
CHECK = "tool_output_ignored"
STEPS = 8
#: the reasoning after a tool response, up to the next call or response or the end
AFTER = re.compile(r"(</tool_response>)(.*?)(?=<tool_call>|<tool_response>|\Z)", re.DOTALL)


def _steps(edit_from: int | None) -> dict[int, list[dict[str, Any]]]:
    table = read_rollouts(HECATE).table.select("prompt", "response", "score")
    rows = table.to_dicts()
    per = len(rows) // STEPS
    out = {}
    for step in range(1, STEPS + 1):
        chunk = [dict(r) for r in rows[(step - 1) * per: step * per]]
        if edit_from is not None and step >= edit_from:
            for r in chunk:
                r["response"] = AFTER.sub(r"\1\nassistant\nSo the result follows.\n", r["response"])
        out[step] = chunk
    return out


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    tmp = tmp_path_factory.mktemp("hecate")
    healthy = diagnosed(write_dump(_steps(None), tmp / "healthy"), base_log(tmp, STEPS))
    ignored = diagnosed(write_dump(_steps(5), tmp / "ignored"), base_log(tmp, STEPS))
    return finding(healthy, CHECK), finding(ignored, CHECK)


def test_the_real_reasoning_reads_the_tool_output(real: tuple[Any, Any]) -> None:
    healthy, _ = real
    assert healthy.status == "ok", healthy.message["en"]
    assert 0.2 < healthy.evidence["first"] < 0.8 and healthy.evidence["last"] == pytest.approx(
        healthy.evidence["first"], rel=0.5)


def test_reasoning_that_stops_reading_the_output_warns_from_its_step(real: tuple[Any, Any]) -> None:
    _, ignored = real
    assert ignored.status == "warn" and ignored.onset_step == 5, ignored.message["en"]
    # "So the result follows.": four words, of which a rare tool response holds one
    assert ignored.evidence["last"] < 0.01 and ignored.evidence["after_last"] == pytest.approx(4, abs=0.1)
    assert ignored.message["en"].startswith("From step 5 the reasoning after a tool response used less of what the "
                                            "tool returned (")
    assert "rollout/tool_response/overlap" in ignored.metrics


def _run(overlap: list[float], after: list[float], before: list[float]) -> Any:
    return make_run({"rollout/tool_response/overlap": overlap, "rollout/tool_response/think_after": after,
                     "rollout/tool_response/think_before": before, "critic/score/mean": [0.5] * len(overlap)})


def test_reasoning_after_the_response_shrinking_alone_warns() -> None:
    n = 20
    shrinking = list(np.linspace(60, 10, n))
    f = finding(diagnose(_run([0.4] * n, shrinking, [30.0] * n)), CHECK)
    said = f.message["en"]
    assert f.status == "warn" and said.startswith("From step ") and "shrank from 56.1 to 13.9 words (-75%)" in said
    # all reasoning shrinking is the length checks' to read, not this one's
    assert finding(diagnose(_run([0.4] * n, shrinking, shrinking)), CHECK).status == "ok"


def test_too_few_steps_cannot_judge() -> None:
    f = finding(diagnose(_run([0.4, 0.3, 0.2, 0.1, 0.0], [9.0] * 5, [9.0] * 5)), CHECK)
    assert f.status == "skipped" and f.message["en"] == ("Only 5 steps have tool responses; the check reads a "
                                                         "change from the first steps to the last, which needs at "
                                                         "least 6.")
