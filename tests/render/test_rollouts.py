"""The ``rollouts`` view and the rollout block of ``diagnose``, golden lines for small real tables
written by the real veRL dump writer, dropped empty columns, and splitting at narrow widths."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import rlvitals
from rlvitals.render.rollout_log import render_rollout_log
from rlvitals.render.rollouts import render_rollouts
from rlvitals.render.summary import rollout_summary
from rlvitals.rollout.writers import write_verl_dump

Sample = tuple[str, str]  # (response, extracted answer)
Prompts = Mapping[tuple[str, str, str], Sequence[Sample]]  # (prompt, target, data source) → samples

STEP_1: Prompts = {
    ("What is 2+2?", "4", "gsm8k"): [("<think>add</think><answer>4</answer>", "4"),
                                     ("<think>add two and two</think><answer>4</answer>", "4"),
                                     ("<think>hmm</think><answer>5</answer>", "5"),
                                     ("<tool_call>calc(2+2)</tool_call><answer>4</answer>", "4")],
    ("What is 3*3?", "9", "math"): [("<answer>9</answer>", "9"),
                                    ("<tool_call>calc(3*3)</tool_call><tool_call>calc(3*3)</tool_call> 9", "9"),
                                    ("6", "6"), ("6", "6")],
}
STEP_2: Prompts = {
    ("What is 5-1?", "4", "gsm8k"): [("<think>five minus one</think><answer>4</answer>", "4")] * 4,
    ("What is 7+7?", "14", "math"): [("<think>seven and seven is fifteen</think><answer>15</answer>", "15"),
                                     ("<answer>14</answer>", "14"), ("15", "15"), ("13", "13")],
}


def _records(prompts: Prompts) -> list[dict[str, Any]]:
    return [{"prompt": prompt, "response": response, "score": float(answer == target), "target": target,
             "correct": answer == target, "answer": answer, "source": source}
            for (prompt, target, source), samples in prompts.items() for response, answer in samples]


def verl_dump(folder: Path) -> Path:
    """Two steps of two prompts × 4 samples with answers, data sources and a few tool calls."""
    write_verl_dump(_records(STEP_1), folder, 1)
    write_verl_dump(_records(STEP_2), folder, 2)
    return folder


def _render(source: Any, ks: tuple[int, ...], width: int = 110, **options: Any) -> list[str]:
    doc = rollout_summary(rlvitals.analyze_rollouts(source, ks=ks, **options), "dump", ks)
    return [line.rstrip() for line in render_rollouts(doc, ks, width=width).splitlines()]


GOLDEN = """\
dump
group scale
 step  groups  rollouts    σ_G  zero-var  all ✓  all ✗  eff.batch  pass@1  pass@4  gap@4  maj@4  sc-gap@4
    1       2         8  0.539         0      0      0          1   0.625       1  0.375   0.75     0.125
    2       2         8   0.25       0.5    0.5      0        0.5   0.625       1  0.375    0.5    -0.125
  all       4        16  0.394      0.25   0.25      0       0.75   0.625       1  0.375  0.625         0
  eff.batch = share of rollouts in groups whose rewards vary; gap@4 = pass@4 − pass@1; sc-gap@4 = maj@4 −
  pass@1 (self-consistency)
σ_G across groups
 step    p10    p50    p90    =0  0-25  25-50  50-75  75-100  shape
    1  0.508  0.539   0.57     0     0      0      0       1  spread
    2   0.05   0.25   0.45   0.5     0      0      0     0.5  at 0
  all   0.15    0.5  0.554  0.25     0      0      0    0.75  bimodal
  =0 … 75-100 = share of groups with σ_G = 0, then by σ_G as % of the largest the step's reward range allows
  (half of max − min)
rollout scale
 step  distinct-2    dup   edit  length×✓  tools  at cap  repeat  valid
    1           1  0.125  0.917  longer ✓  0.375   0.125   0.333      0
    2       0.625  0.375    0.5  longer ✓      0       0
  all       0.812   0.25  0.708  longer ✓  0.188  0.0625   0.333      0
  dup = share of exact duplicate responses; edit = mean normalised word edit distance; length×✓ = longer
  responses more (✓) or less (✗) often correct, within groups; tools = calls per rollout; repeat = share of
  repeated calls; valid = share of calls whose arguments parse (and fit --tool-schema)
by data source
 source  pass@1  score  id_gap  pass@1 step 1  pass@1 step 2
 gsm8k    0.875  0.875       0           0.75              1
 math     0.375  0.375     0.5            0.5           0.25
  id_gap = pass@1 of the in-distribution sources − the source's
  length × correctness, all steps: longer ✓ (within-group Spearman 0.602 over 3 groups; |ρ| ≤ 0.1 reads as no
  change); correct by length quartile, shortest first: 0 0.75 1 0.75
  σ_G across the groups, all steps: bimodal: a heap of groups at σ_G = 0 and a heap at the largest spread —
  the batch splits into prompts the policy always (or never) solves and prompts it solves half the time; only
  the second heap teaches, so the effective batch is that heap (dynamic sampling or a curriculum would refill
  it)"""


def test_rollouts_view_of_a_verl_dump(tmp_path: Path) -> None:
    lines = _render(verl_dump(tmp_path / "dump"), (1, 2, 4), id_sources=["gsm8k"], tool_call_cap=2)
    end = next(i for i, line in enumerate(lines) if line.startswith("  not computed"))
    # step 1: maj@4 of the answers 4 4 5 4 is 1 and of 9 9 6 6 a tie, 1/2: sc-gap@4 = ((1 − 0.75) + (0.5 − 0.5)) / 2;
    # tool calls 1 + 2 over 8 rollouts, one rollout at the cap of 2, one call of three a repeat; none valid:
    # add(0, 0)-style calls are not a JSON object of arguments
    assert "\n".join(lines[:end]) == GOLDEN
    assert "  not computed diversity/state_coverage: needs the rollout column 'states'" in lines[end:]


def test_counts_are_integers_and_empty_columns_are_left_out() -> None:
    # 2 steps × 320 groups × 8 samples of 0/1 scores: no answers (no maj@k), no tool calls, no sources
    scores = (np.random.default_rng(0).random((2, 320, 8)) < 0.3).astype(float)
    lines = _render(scores, (1, 2, 4, 8, 16))
    assert lines[1:6] == [
        "group scale",
        " step  groups  rollouts    σ_G  zero-var  all ✓   all ✗  eff.batch  pass@1  pass@8  gap@8",
        "    0     320      2560  0.444    0.0594      0  0.0594      0.941   0.303   0.941  0.638",
        "    1     320      2560  0.448    0.0437      0  0.0437      0.956   0.296   0.956   0.66",
        "  all     640      5120  0.446    0.0516      0  0.0516      0.948     0.3   0.948  0.649",  # was 5.12e+03
    ]
    # pass@16 of groups of 8 is empty everywhere: the view goes up to k = 8; no maj@8 without answers;
    # nothing at the rollout scale (a bare score array has no responses); no source table
    view = " ".join(lines[:next(i for i, line in enumerate(lines) if line.startswith("  not computed"))])
    assert not any(word in view for word in ("pass@16", "maj@", "sc-gap", "rollout scale",
                                                         "by data source", "length ×"))


def test_truncation_share_and_the_per_step_length_reading() -> None:
    records = [{"step": s, "prompt": "p", "response": "word " * n, "length": n, "score": float(ok), "truncated": cut}
               for s, rows in ((1, [(3, True, False), (9, False, True)]), (2, [(3, False, False), (9, True, True)]))
               for n, ok, cut in rows]
    lines = _render(records, (1, 2))
    at = lines.index("rollout scale")
    # step 1: the longer response is the wrong one, step 2 the right one; the two cancel overall
    assert lines[at + 1:at + 5] == [" step  distinct-2  dup   edit  length×✓   trunc",
                                    "    1         0.1    0  0.667  longer ✗     0.5",
                                    "    2         0.1    0  0.667  longer ✓     0.5",
                                    "  all         0.1    0  0.667  no change    0.5"]
    assert lines[at + 6] == "  responses more (✓) or less (✗) often correct, within groups; trunc = share truncated"
    assert lines[at + 7] == ("  length × correctness, all steps: no change (within-group Spearman 0 over 2 groups; "
                             "|ρ| ≤ 0.1 reads as no")


def _wide_doc() -> tuple[dict[str, Any], tuple[int, ...]]:
    rng = np.random.default_rng(1)
    records = []
    for step in (1, 1000):
        for g in range(40):
            for _ in range(16):
                answer = str(rng.integers(0, 3))
                records.append({"step": step, "prompt": f"p{g}", "answer": answer, "correct": answer == "0",
                                "score": 12.5 * (answer == "0") - 3, "truncated": bool(rng.integers(0, 2)),
                                "response": f"<tool_call>x</tool_call> {answer} " * int(rng.integers(1, 4)),
                                "source": "openai/gsm8k" if g % 2 else "DigitalLearningGmbH/MATH-lighteval"})
    ks = (1, 2, 4, 8, 16)
    analysis = rlvitals.analyze_rollouts(records, ks=ks, id_sources=["openai/gsm8k"], tool_call_cap=3)
    return rollout_summary(analysis, "wide", ks), ks


def test_every_column_fits_120_columns_in_one_table_each() -> None:
    doc, ks = _wide_doc()
    lines = [line.rstrip() for line in render_rollouts(doc, ks, width=120).splitlines()]
    assert max(len(line) for line in lines) <= 120
    assert "continued" not in " ".join(lines)
    assert lines[2].split() == ["step", "groups", "rollouts", "σ_G", "zero-var", "all", "✓", "all", "✗",
                                "eff.batch", "pass@1", "pass@16", "gap@16", "maj@16", "sc-gap@16"]
    at = lines.index("rollout scale")
    assert lines[at + 1].split() == ["step", "distinct-2", "dup", "edit", "length×✓", "trunc", "tools", "at", "cap",
                                     "repeat", "valid"]
    assert lines[lines.index("by data source") + 1].split() == ["source", "pass@1", "score", "id_gap", "pass@1",
                                                                "step", "1", "pass@1", "step", "1000"]


def test_a_narrow_terminal_gets_more_tables_not_folded_cells() -> None:
    doc, ks = _wide_doc()
    wide = render_rollouts(doc, ks, width=120).splitlines()
    lines = [line.rstrip() for line in render_rollouts(doc, ks, width=60).splitlines()]
    assert max(len(line) for line in lines) <= 60
    view = lines[:next(i for i, line in enumerate(lines) if line.startswith("  not computed"))]
    titles = [line for line in view if line and not line.startswith(" ")]
    assert titles[:8] == ["wide", "group scale", "group scale, continued", "group scale, continued",
                          "σ_G across groups", "σ_G across groups, continued", "rollout scale",
                          "rollout scale, continued"]
    assert titles[8:] == ["by data source"] + ["by data source, continued"] * 3  # a 34-character source name
    # each part is led by the step column, and every cell of the wide view is still there, unfolded
    for title in ("group scale, continued", "rollout scale, continued"):
        assert lines[lines.index(title) + 1].split()[0] == "step"
    cells = {c for line in wide[3:6] for c in line.split()}
    assert cells <= {c for line in lines for c in line.split()}


def test_rollout_log_under_a_diagnosis_shows_the_first_skips_and_how_many_more() -> None:
    log = {"path": "dump/", "skipped": {"count": 7, "reasons": [f"dump/1.jsonl:{i}: invalid JSON" for i in range(7)]},
           "not_computed": ["tokens: token metrics need 'token_entropy'", "rollout/tool_calls/at_cap: needs a cap"],
           "notes": ["group sizes vary: 3, 4 samples"]}
    assert render_rollout_log(log).splitlines() == [
        "rollouts dump/: 7 line(s) or row(s) skipped, 2 metric families or keys not computed",
        *(f"  skipped dump/1.jsonl:{i}: invalid JSON" for i in range(5)),
        "  … and 2 more (rlvitals rollouts dump/ lists them)",
        "  not computed tokens; rollout/tool_calls/at_cap (rlvitals rollouts dump/ says why)",
        "  note group sizes vary: 3, 4 samples",
    ]
    clean = {"path": "d", "skipped": {"count": 0, "reasons": []}, "not_computed": [], "notes": []}
    assert render_rollout_log(clean) == "rollouts d: nothing skipped\n"


def test_rollout_log_with_verbose_lists_every_reason_whole() -> None:
    log = {"path": "dump/", "skipped": {"count": 0, "reasons": []},
           "not_computed": ["tokens: token metrics need 'token_entropy'", "rollout/tool_calls/at_cap: needs a cap"],
           "notes": ["group sizes vary: 3, 4 samples"]}
    assert render_rollout_log(log, verbose=True).splitlines() == [
        "rollouts dump/: nothing skipped, 2 metric families or keys not computed",
        "  not computed (2):",
        "    tokens: token metrics need 'token_entropy'",
        "    rollout/tool_calls/at_cap: needs a cap",
        "  note group sizes vary: 3, 4 samples",
    ]
    assert render_rollout_log(log, lang="zh", verbose=True).splitlines()[1:3] == [
        "  没有算出的指标（2 项，原因为英文原文）：", "    tokens: token metrics need 'token_entropy'"]
    clean = {**log, "not_computed": []}
    assert render_rollout_log(clean, verbose=True) == render_rollout_log(clean)


def test_sigma_g_across_groups_is_a_table_and_its_shape_is_said_in_both_languages() -> None:
    """Constructed: 3 groups always right, 2 never, 7 half right (0/1 reward, 4 rollouts): 5 of 12 groups at
    σ_G = 0 and 7 in the top band, a bimodal batch."""
    outcomes = [[1.0] * 4] * 3 + [[0.0] * 4] * 2 + [[1.0, 0.0, 1.0, 0.0]] * 7
    rows = [{"step": 1, "prompt": f"q{g}", "response": str(i), "score": r}
            for g, rs in enumerate(outcomes) for i, r in enumerate(rs)]
    a = rlvitals.analyze_rollouts(rows, ks=(1, 4))
    doc = rollout_summary(a, "mine.jsonl", (1, 4))
    en, zh = (render_rollouts(doc, (1, 4), width=140, lang=lang) for lang in ("en", "zh"))
    assert "σ_G across groups" in en and "组间 σ_G 分布" in zh
    line = next(ln for ln in en.splitlines() if ln.strip().startswith("1 ") and "bimodal" in ln)
    assert line.split()[:9] == ["1", "0", "0.577", "0.577", "0.417", "0", "0", "0", "0.583"]
    assert "σ_G across the groups, all steps: bimodal: a heap of groups at σ_G = 0" in en
    assert "组间 σ_G 分布（全部步）：双峰" in zh and "双峰" in zh
