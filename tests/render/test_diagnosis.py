"""The terminal and Markdown diagnosis, golden: a note has its own mark, word and place (after fail and
warn, with its advice) and never changes the verdict or the layer glance; point events are written at
their steps. The Diagnoses are constructed (no real log holds a note and a point event together yet):
the findings are made by hand and assembled by the real ``assemble``, so verdicts are the real rule."""

from __future__ import annotations

import numpy as np
from runs import make_run

from rlvitals.diagnosis import Diagnosis, Finding, assemble
from rlvitals.render.diagnosis import render_diagnosis, render_markdown, when_words


def _f(check: str, layer: str, status: str, title: str, message: str, advice: str = "", **kw: object) -> Finding:
    return Finding(check, layer, status, {"en": title, "zh": f"{title}（中）"},  # type: ignore[arg-type]
                   {"en": message, "zh": f"{message}（中）"}, {"en": advice, "zh": f"{advice}（中）" if advice else ""},
                   **kw)  # type: ignore[arg-type]


def _diagnosis(*findings: Finding) -> Diagnosis:
    run = make_run({"actor/entropy": np.linspace(1.0, 0.5, 300), "critic/score/mean": np.linspace(0, 1, 300)},
                   config={"algorithm.adv_estimator": "grpo"}, path="run.log")
    return assemble(run, list(findings))


SPIKES = _f("grad_norm_spike", "L1", "warn", "Gradient-norm spike", "actor/grad_norm spiked 3 times.",
            "Inspect the rollouts of the spike steps.", metrics=("actor/grad_norm",), onset_step=95,
            span=(95, 210), points=(95, 140, 210), evidence={"peak": 19.1})
MFU = _f("mfu_low", "efficiency", "note", "Low MFU", "MFU is low: actor 19%.", "Raise the micro-batch size.",
         metrics=("perf/mfu/actor",), onset_step=1, span=(1, 300))
BALANCE = _f("seqlen_imbalance", "efficiency", "note", "Load imbalance across ranks", "The heaviest rank waits.",
             "Enable balance_batch.", onset_step=40, span=(40, 300))
ENTROPY = _f("entropy_collapse", "L2", "ok", "Entropy collapse", "No collapse.")
PASSK = _f("passk_gap", "L4", "skipped", "pass@k gap", "needs rollouts.")


def test_notes_are_listed_after_the_warnings_and_leave_the_verdict_ok() -> None:
    d = _diagnosis(MFU, BALANCE, ENTROPY, PASSK)
    assert d.verdict == "ok" and d.layers["efficiency"] == "ok"
    assert render_diagnosis(d, width=120) == (
        "run.log  verl · GRPO · 300 training steps  verdict: OK\n"
        "  · L5 generalisation  · L1 stability  ✓ efficiency  ✓ L2 behaviour  · L3 signal  · L4 exploration  "
        "· L6 reasoning\n"
        "  2 notes\n"
        "\n"
        "✓ Nothing to act on: 1 check passed, 1 could not judge (skipped); 2 notes below could be better.\n"
        "\n"
        "i NOTE    efficiency Low MFU  since step 1 (steps 1–300)\n"
        "    MFU is low: actor 19%.\n"
        "    → Raise the micro-batch size.\n"
        "\n"
        "i NOTE    efficiency Load imbalance across ranks  since step 40 (steps 40–300)\n"
        "    The heaviest rank waits.\n"
        "    → Enable balance_batch.\n"
        "\n"
        "✓ L2 behaviour    1 passed\n"
        "· L4 exploration  1 skipped\n"
        "  --all lists each passed and skipped check with its words\n")


def test_a_point_event_is_shown_at_its_steps_and_a_note_after_it() -> None:
    d = _diagnosis(MFU, SPIKES, ENTROPY)
    assert d.verdict == "warn" and d.layers["L1"] == "warn" and d.layers["efficiency"] == "ok"
    assert render_diagnosis(d, width=120) == (
        "run.log  verl · GRPO · 300 training steps  verdict: WARN\n"
        "  · L5 generalisation  ! L1 stability  ✓ efficiency  ✓ L2 behaviour  · L3 signal  · L4 exploration  "
        "· L6 reasoning\n"
        "  1 warning · 1 note\n"
        "\n"
        "Root cause — fix this first\n"
        "! WARN    L1         Gradient-norm spike  at steps 95, 140, 210\n"
        "    actor/grad_norm spiked 3 times.\n"
        "    → Inspect the rollouts of the spike steps.\n"
        "\n"
        "i NOTE    efficiency Low MFU  since step 1 (steps 1–300)\n"
        "    MFU is low: actor 19%.\n"
        "    → Raise the micro-batch size.\n"
        "\n"
        "✓ L2 behaviour  1 passed\n"
        "  --all lists each passed and skipped check with its words\n")


def test_chinese_words_for_a_note_and_for_point_events() -> None:
    text = render_diagnosis(_diagnosis(MFU, SPIKES), lang="zh", width=120)
    lines = text.splitlines()
    assert lines[0].endswith("结论：警告") and lines[2] == "  1 项警告 · 1 项提示"
    assert lines[4] == "根本原因——先处理这一项"
    assert lines[5] == "! 警告      L1         Gradient-norm spike（中）  第 95、140、210 步"
    assert "i 提示      效率       Low MFU（中）  自第 1 步（1–300）" in lines  # the layer's code in Chinese too
    assert "    → Raise the micro-batch size.（中）" in lines


def test_many_points_are_capped() -> None:
    many = _f("loss_jump", "L1", "warn", "Loss jump", "12 jumps.", onset_step=10, span=(10, 120),
              points=tuple(range(10, 130, 10)))
    head = render_diagnosis(_diagnosis(many), width=120).splitlines()[5]
    assert head.endswith("Loss jump  at steps 10, 20, 30, 40, 50, 60, 70, 80 … 4 more")
    assert when_words(10, (10, 120), many.points) == {
        "en": "at steps 10, 20, 30, 40, 50, 60, 70, 80 … 4 more",
        "zh": "第 10、20、30、40、50、60、70、80 步…（另 4 处）"}
    assert when_words(7, (7, 7), (7,)) == {"en": "at step 7", "zh": "第 7 步"}
    assert when_words(None, None) is None


def test_all_lists_passed_and_skipped_after_the_notes() -> None:
    text = render_diagnosis(_diagnosis(MFU, ENTROPY, PASSK), show_all=True, width=120)
    heads = [line.split()[:2] for line in text.splitlines() if line[:2] in ("✗ ", "! ", "i ", "✓ ", "· ")]
    assert heads == [["✓", "Nothing"], ["i", "NOTE"], ["✓", "OK"], ["·", "SKIPPED"]]  # the healthy line first


def test_markdown_lists_notes_with_their_advice_and_keeps_the_layer_ok() -> None:
    md = render_markdown(_diagnosis(SPIKES, MFU, BALANCE, ENTROPY))
    assert md.splitlines()[2:4] == ["verl · GRPO · 300 training steps — **WARN**", "1 warning · 2 notes"]
    assert "| Efficiency: where does the time go? | ✓ OK |" in md
    section = md[md.index("## Efficiency"):]
    assert section.splitlines()[2:7] == [
        "- **NOTE** — **Low MFU** (since step 1 (steps 1–300))", "  MFU is low: actor 19%.",
        "  Metrics: `perf/mfu/actor`", "  → Raise the micro-batch size.",
        "- **NOTE** — **Load imbalance across ranks** (since step 40 (steps 40–300))"]
    assert "- **WARN** — **Gradient-norm spike** (at steps 95, 140, 210)\n" in md
    assert "  Evidence: peak = 19.1\n" in md
    zh = render_markdown(_diagnosis(MFU), lang="zh")
    assert "— **正常**\n1 项提示\n" in zh and "- **提示** — **Low MFU（中）** (自第 1 步（1–300）)" in zh


def test_markdown_sums_up_passed_and_skipped_checks_in_one_line_each() -> None:
    again = _f("entropy_collapse", "L2", "ok", "Entropy collapse", "No collapse of actor/entropy_x.")
    surge = _f("entropy_surge", "L2", "ok", "Entropy surge", "No surge.")
    skipped = _f("format_compliance", "L2", "skipped", "Format compliance", "needs rollouts.")
    d = _diagnosis(MFU, ENTROPY, again, surge, skipped, PASSK)
    md = render_markdown(d)
    section = md[md.index("## Policy behaviour"):].split("\n## ")[0].splitlines()
    # a check with two findings is one title; no message of a passed or skipped check is printed
    assert section[2:] == ["- ✓ passed (2): Entropy collapse, Entropy surge", "- · skipped (1): Format compliance"]
    assert "No collapse" not in md and "needs rollouts" not in md
    assert md.endswith("\n*`rlvitals diagnose --markdown --all` lists each passed and skipped check with its words.*\n")
    full = render_markdown(d, show_all=True)
    assert "- **OK** — **Entropy surge**\n  No surge.\n" in full and "passed (2)" not in full and "--all" not in full
    zh = render_markdown(d, lang="zh")
    assert "- ✓ 通过 2 项：Entropy collapse（中）、Entropy surge（中）" in zh and "会逐项列出通过和跳过的检查" in zh
    # nothing passed or skipped: no summary line and no pointer to --all
    assert "--all" not in render_markdown(_diagnosis(MFU))


def test_passed_and_skipped_checks_are_one_line_per_layer_in_both_languages() -> None:
    again = _f("entropy_collapse", "L2", "ok", "Entropy collapse", "No collapse of actor/entropy_x.")
    surge = _f("entropy_surge", "L2", "ok", "Entropy surge", "No surge.")
    skipped = _f("format_compliance", "L2", "skipped", "Format compliance", "needs rollouts.")
    d = _diagnosis(SPIKES, ENTROPY, again, surge, skipped, PASSK)
    lines = render_diagnosis(d, width=120).splitlines()
    # a check with two findings counted once; no title of a passed or skipped check named
    assert lines[-3:] == ["✓ L2 behaviour    2 passed, 1 skipped", "· L4 exploration  1 skipped",
                          "  --all lists each passed and skipped check with its words"]
    assert "Entropy surge" not in render_diagnosis(d, width=120)
    zh = render_diagnosis(d, lang="zh", width=120).splitlines()
    assert zh[-3:] == ["✓ L2 策略行为  通过 2 项，跳过 1 项", "· L4 探索      跳过 1 项",
                       "  加 --all 可逐项列出通过和跳过的检查及其说明"]
    # --all lists each of them with its words instead
    full = render_diagnosis(d, show_all=True, width=120)
    assert "No surge." in full and "needs rollouts." in full and "--all" not in full
