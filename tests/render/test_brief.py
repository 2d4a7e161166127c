"""The short views on real corpus runs: ``--brief`` (the verdict, then one line per warn/fail finding in the
story's order, with the key number its message states) and the table that opens several runs, wide and
narrow, in both languages."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from corpus import corpus_input

from rlvitals import diagnose, load
from rlvitals.diagnosis import Diagnosis
from rlvitals.render.brief import brief_markdown, key_number, render_brief, render_runs_table, runs_markdown

BLOWUP = "trlconsole__nips-grpo-dynamics__qwen25-7b-grpo-entropy-blowup"
KLREWARD = "verl__agent-opd__qwen3-4b-klreward-length-collapse"
HEALTHY = "verl__agent-opd__qwen2.5-3b-klreward0.0005-healthy"


def _diagnosis(run_id: str, where: Path | None = None) -> Diagnosis:
    """A corpus run diagnosed, copied first to ``where`` (so that its name is that path) when given."""
    path = corpus_input(run_id)
    if where is not None:
        where.mkdir(parents=True, exist_ok=True)
        path = Path(shutil.copy(path, where / path.name))
    (run,) = load(path)
    return diagnose(run)


def test_brief_is_the_verdict_then_one_line_per_warning_and_failure(tmp_path: Path) -> None:
    d = _diagnosis(BLOWUP, tmp_path / "runs" / "blowup")
    name = str(tmp_path / "runs" / "blowup" / "rho1.00_seed43.log")
    assert render_brief(d, width=200).splitlines() == [
        f"{name}  verdict: FAIL · 6 failures · 40 training steps",
        "  ✗ FAIL   step 25  L2 Entropy surge  0.155 → 7.14",
        "  ✗ FAIL   step 20  L5 ↳ Reward collapse  0.95 → 0",
        "  ✗ FAIL   step 30  L2 ↳ Responses truncated at the length limit",
        "  ✗ FAIL   step 30  L3 ↳ Zero-variance groups",
        "  ✗ FAIL   step 30  L3 ↳ Reward spread collapsing  0.27 → 0",
        "  ✗ FAIL   step 10  L1 Gradient norm exactly zero"]
    zh = render_brief(d, "zh", width=200).splitlines()
    assert zh[0] == f"{name}  结论：失败 · 6 项失败 · 40 个训练步"
    assert zh[1] == "  ✗ 失败   第 25 步  L2 熵突然上升  0.155 → 7.14"
    assert brief_markdown(d).splitlines()[2:6] == [
        "trl · GRPO-style (group baseline, no critic) · 40 training steps — **FAIL** · 6 failures", "",
        "- **FAIL** step 25 · L2 **Entropy surge** — `0.155 → 7.14`",
        "- **FAIL** step 20 · L5 ↳ **Reward collapse** — `0.95 → 0`"]


def test_brief_lists_every_warning_and_failure_once_and_nothing_else() -> None:
    d = _diagnosis(KLREWARD)
    lines = [line for line in render_brief(d).splitlines() if line.startswith(("  ✗ ", "  ! "))]
    acting = [f for f in d.findings if f.status in ("warn", "fail")]
    assert len(lines) == len(acting) == 9  # the 8 failures and the agent dropping its tools (a warning)
    for f in acting:
        assert sum(f" {f.title['en']}" in line for line in lines) == sum(g.title == f.title for g in acting)
    assert lines[0].startswith("  ✗ FAIL   step 4 ")  # the root cause first: the KL penalty's jump
    assert render_brief(_diagnosis(HEALTHY), width=200).count("\n") == 1  # a healthy run: its verdict line only


@pytest.mark.parametrize("run_id", [BLOWUP, KLREWARD, HEALTHY, "trlconsole__hotpotqa_qwen25_3b_grpo_klrunaway",
                                    "trlconsole__trldapo_qwen25vl3b_grpo_collapse"])
def test_a_key_number_is_one_its_message_states(run_id: str) -> None:
    shown = 0
    for f in _diagnosis(run_id).findings:
        number = key_number(f)
        if number:
            shown += 1
            for said in number.split(" → "):
                assert re.search(rf"(?<![\d.]){re.escape(said)}(?!\.?\d)", f.message["en"]), (f.check, number)
    assert shown or run_id == HEALTHY


def test_the_jump_is_read_to_where_the_message_says_it_went() -> None:
    # kl_jump's evidence holds the jump's first peak (4.38) and the level after it (16.9); its message says the
    # second: the line must not show the first
    jump = next(f for f in _diagnosis(KLREWARD).findings if f.check == "kl_jump")
    assert jump.evidence["peak"] != jump.evidence["after"] and key_number(jump) == "0.848 → 16.9"


def test_the_table_of_runs_has_one_row_per_run_and_folds_when_names_are_long(tmp_path: Path) -> None:
    ds = [_diagnosis(BLOWUP, tmp_path / "a"), _diagnosis(HEALTHY, tmp_path / "b")]
    names = [str(tmp_path / "a" / "rho1.00_seed43.log"), str(tmp_path / "b" / "output.log")]
    pad = max(map(len, names)) + 2
    assert render_runs_table(ds, width=200).splitlines() == [
        "run".ljust(pad) + "verdict  steps  headline",
        names[0].ljust(pad) + "✗ FAIL      40  Entropy surge (step 25)",
        names[1].ljust(pad) + "✓ OK       179  nothing to act on", ""]
    # too narrow for the names beside the rest: each name whole on its own line, the rest under it
    assert render_runs_table(ds, width=len(names[0])).splitlines() == [
        "run", "  verdict  steps  headline", names[0], "  ✗ FAIL      40  Entropy surge (step 25)",
        names[1], "  ✓ OK       179  nothing to act on", ""]
    assert runs_markdown(ds, "zh").splitlines() == [
        "| 运行 | 结论 | 步数 | 根本原因 |", "|---|---|---:|---|",
        f"| {names[0]} | ✗ 失败 | 40 | 熵突然上升（第 25 步） |",
        f"| {names[1]} | ✓ 正常 | 179 | 没有需要处理的问题 |", ""]
