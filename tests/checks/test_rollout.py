"""Checks on rollout-derived series (checks/rollout.py), on the path a user takes: rollouts in a dump on disk →
analyze_rollouts → Run.with_series → diagnose.

Real rollouts: the 576 training rollouts a Logic-RL run (Qwen2.5-3B, REINFORCE++, R1 think/answer format)
printed in its console log in the corpus, and rollouts sampled here from the real SmolLM2-135M-Instruct (with
their token entropies). The failure cases are constructed — no public dump shows them — most by editing the
real Logic-RL responses (each test says how); and every message template is formatted in both languages.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from optional import unavailable
from runs import finding, make_run

import rlvitals
from rlvitals.checks import Outcome, RunView, load_checks, rollout
from rlvitals.cli import main
from rlvitals.diagnosis import Diagnosis, diagnose
from rlvitals.rollout.analysis import analyze_rollouts
from rlvitals.rollout.writers import write_verl_dump
from rlvitals.run.run import Run
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

ROOT = Path(__file__).resolve().parents[2]
LOGIC_RL = ROOT / "benchmarks/corpus/runs/verl__logic-rl-formula__reinforcepp-qwen2.5-3b-10steps/output.log"
MINE = tuple(rollout.FUNCTIONS)
Rows = dict[int, list[dict[str, Any]]]


# ---------------------------------------------------------------- real rollouts and the path they take

def logic_rl_rollouts() -> Rows:
    """The rollouts the Logic-RL reward function printed before each training step's metric line, by step:
    response, total score, ground truth. The printed blocks carry no prompt; the rollouts of one puzzle share
    its ground truth, so that stands in for the prompt (veRL then groups a step's rollouts by it). The
    response keeps the tokenizer's end token ``<|im_end|>``, which veRL's dump decodes away
    (skip_special_tokens), so it is dropped here too. Step 0's 100 blocks are validation, left out."""
    lines = LOGIC_RL.read_text(encoding="utf-8").split("\n")
    marks = [i for i, line in enumerate(lines) if line.startswith("step:")]
    out: Rows = {}
    for begin, end in zip([0, *marks], marks, strict=False):
        step = int(lines[end].split(" ", 1)[0][5:])
        text = "\n".join(lines[begin:end])
        for block in text.split("Processing New Sample")[1:]:
            response = re.search(r"\[Model Response\]\n(.*?)\n\n\[Structure Validation\]", block, re.S)
            truth = re.search(r"\[Ground Truth\] Final assignment: (.*)", block)
            total = re.search(r"Total: (\S+)", block)
            assert response and truth and total, block[:300]
            out.setdefault(step, []).append({"prompt": truth.group(1), "target": truth.group(1),
                                             "response": response.group(1).replace("<|im_end|>", ""),
                                             "score": float(total.group(1)),
                                             "passed": "Format validation: PASS" in block})
    del out[0]
    return out


def write_dump(rows: Rows, folder: Path) -> Path:
    for step, records in rows.items():
        write_verl_dump(records, folder, step)
    return folder


def write_jsonl(rows: Rows, path: Path) -> Path:
    """A generic rollout table whose columns carry the table's names (read as is): lists such as
    ``token_entropy`` have no place in a veRL dump."""
    path.write_text("".join(json.dumps({"step": s, **r}) + "\n" for s, recs in rows.items() for r in recs))
    return path


def base_log(tmp: Path, steps: int) -> Path:
    """A healthy simulated veRL JSONL run (no collapse, no spike) for the rollouts to join."""
    path = tmp / "run.jsonl"
    path.write_bytes(b"\n".join(jsonl_lines(Scenario(steps=steps, collapse_at=None, grad_spike_at=None))) + b"\n")
    return path


def diagnosed(rollouts: Path, log: Path, **options: Any) -> Diagnosis:
    """The join ``diagnose --rollouts`` makes: the analysis's per-step series onto the run's steps."""
    return diagnose(analyze_rollouts(rollouts, **options).join(rlvitals.load(str(log))[0]))


def mine(d: Diagnosis) -> dict[str, Any]:
    return {f.check: f for f in d.findings if f.check in MINE}


def cycled(rows: Rows, steps: int) -> Rows:
    """Real rollouts for ``steps`` steps: step s reuses the rollouts of Logic-RL step ((s - 1) mod 9) + 1."""
    return {s: [dict(r) for r in rows[(s - 1) % len(rows) + 1]] for s in range(1, steps + 1)}


@pytest.fixture(scope="module")
def logic() -> Rows:
    return logic_rl_rollouts()


def test_format_compliance_is_what_the_real_reward_function_printed(logic: Rows) -> None:
    # the run's own format check ("Format validation: PASS/FAIL") and the R1 rule of rollout/format_compliance
    # agree on 575 of the 576 rollouts once the end token is gone; the one they differ on has a sentence after
    # </answer>, which Logic-RL's check lets pass and the R1 rule (nothing after </answer>) does not
    from rlvitals.rollout.segments import format_compliant

    differ = [(s, r["response"]) for s, recs in logic.items() for r in recs
              if format_compliant(r["response"]) != r["passed"]]
    assert len(differ) == 1 and differ[0][0] == 4
    assert differ[0][1].rstrip().endswith("satisfies all the given formulas.") and "</answer>\nThe" in differ[0][1]
    series = analyze_rollouts([{"step": s, **r} for s, recs in logic.items() for r in recs]).series()
    printed = [sum(r["passed"] for r in logic[s]) / len(logic[s]) for s in sorted(logic)]
    printed[3] -= 1 / 64
    assert series["rollout/format_compliance"].to_list() == printed
    assert [len(logic[s]) for s in sorted(logic)] == [64] * 9


def test_real_logic_rl_rollouts_joined_to_their_own_run(logic: Rows, tmp_path: Path) -> None:
    d = diagnosed(write_dump(logic, tmp_path / "dump"), LOGIC_RL)
    found = mine(d)
    # 77-95 % of rollouts pass the format (the log's own check): 86 % over steps 7-9 is a note, not a verdict
    fmt = found["format_compliance"]
    assert fmt.status == "note" and fmt.evidence["last"] == pytest.approx(55 / 64)
    assert "86% of rollouts followed the think-then-answer format from step 7 on" in fmt.message["en"]
    assert "14% still break it" in fmt.message["en"] and "仍有 14% 不合规" in fmt.message["zh"]
    # ~250-word reasoning repeating 5 % of its 4-grams; the answer in the reasoning 25-48 %, flat
    assert found["think_repetition"].status == "ok" and found["think_repetition"].evidence["last"] < 0.07
    assert found["answer_in_reasoning"].status == "ok"
    assert found["effective_batch"].status == "ok" and found["effective_batch"].evidence["last"] == 1.0
    # no tool calls and no token entropies in these rollouts: said, not judged
    for cid, key in (("tool_call_repeats", "rollout/tool_calls/repeat_rate"),
                     ("high_entropy_tokens", "token/entropy_high_share")):
        assert found[cid].status == "skipped" and found[cid].message["en"] == f"needs {key}, which this run did not log"


def test_veRL_boxed_answers_follow_the_format(logic: Rows, tmp_path: Path) -> None:
    """The real Logic-RL rollouts with each R1 answer written the way veRL's own rewards want it instead:
    the think segment, then "The final answer is \\boxed{\\text{…}}" (nested braces, no <answer> tags). They
    follow the format exactly as often as the originals followed R1's — not never, as a run in veRL's format
    was read before (format compliance 0 % on every step: "absent", a failure)."""
    from rlvitals.rollout.segments import format_compliant

    def boxed(r: dict[str, Any]) -> dict[str, Any]:
        if not format_compliant(r["response"]):
            return dict(r)
        def box(m: re.Match[str]) -> str:
            return " The final answer is \\boxed{\\text{" + m.group(1) + "}}"
        text = re.sub(r"\s*<answer>(.*?)</answer>", box, r["response"], flags=re.S)
        return {**r, "response": text}

    rows = {s: [boxed(r) for r in recs] for s, recs in logic.items()}
    assert sum("<answer>" not in r["response"] for recs in rows.values() for r in recs) == 489  # of 576
    originals = analyze_rollouts([{"step": s, **r} for s, recs in logic.items() for r in recs]).series()
    series = analyze_rollouts([{"step": s, **r} for s, recs in rows.items() for r in recs]).series()
    assert series["rollout/format_compliance"].to_list() == originals["rollout/format_compliance"].to_list()
    fmt = mine(diagnosed(write_dump(rows, tmp_path / "dump"), LOGIC_RL))["format_compliance"]
    assert fmt.status == "note" and fmt.evidence["last"] == pytest.approx(55 / 64)


def test_cli_diagnose_with_the_real_dump(logic: Rows, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    dump = write_dump(logic, tmp_path / "dump")
    assert main(["diagnose", str(LOGIC_RL), "--rollouts", str(dump), "--json"], out, err) == 0, err.getvalue()
    findings = {f["check"]: f for f in orjson.loads(out.getvalue())["runs"][0]["findings"] if f["check"] in MINE}
    assert set(findings) == set(MINE)
    assert findings["format_compliance"]["status"] == "note" and findings["format_compliance"]["span"] == [7, 9]
    assert findings["effective_batch"]["status"] == "ok"


def test_other_tags_are_read_when_the_command_is_given_them(logic: Rows, tmp_path: Path) -> None:
    # constructed: the real rollouts with their tags renamed to [THINK] … [/THINK] and [ANSWER] … [/ANSWER]
    tags = {"<think>": "[THINK]", "</think>": "[/THINK]", "<answer>": "[ANSWER]", "</answer>": "[/ANSWER]"}
    rows = {s: [{**r, "response": re.sub("|".join(map(re.escape, tags)), lambda m: tags[m.group(0)], r["response"])}
                for r in recs] for s, recs in logic.items()}
    dump = write_dump(rows, tmp_path / "dump")

    def fmt(*options: str) -> dict[str, Any]:
        out, err = io.StringIO(), io.StringIO()
        code = main(["diagnose", str(LOGIC_RL), "--rollouts", str(dump), "--json", *options], out, err)
        assert code == 0, err.getvalue()
        return next(f for f in orjson.loads(out.getvalue())["runs"][0]["findings"] if f["check"] == "format_compliance")

    unused = fmt()
    assert unused["status"] == "skipped" and "--think-tag and --answer-tag" in unused["message"]["en"]
    judged = fmt("--think-tag", "[THINK] [/THINK]", "--answer-tag", "[ANSWER] [/ANSWER]")
    assert judged["status"] == "note" and judged["evidence"]["last"] == pytest.approx(55 / 64)


def test_without_rollouts_every_rollout_check_says_what_it_needs() -> None:
    d = diagnose(rlvitals.load(str(LOGIC_RL))[0])
    for cid, f in mine(d).items():
        needs = ", ".join(" or ".join(alts) for alts in {c.id: c for c in load_checks()}[cid].needs)
        assert f.status == "skipped" and f.message["en"] == f"needs {needs}, which this run did not log"


# ---------------------------------------------------------------- the real small model

STEPS, PROBLEMS, G, MAX_NEW = 6, 2, 4, 20  # 48 rollouts, 1.5 minutes on 2 busy cores; 6 steps: a start and an end


@pytest.fixture(scope="module")
def smol(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real SmolLM2-135M rollouts with token entropies: the same two problems at every step, so the steps
    differ only by sampling — a policy that does not change, the healthy control of the token checks."""
    from rlvitals.synthetic.sampler import INSTALL, load_policy, missing_packages, sample_rollouts
    from rlvitals.synthetic.word_problems import SOURCES, make_problems

    if missing_packages():
        unavailable(f"the small model needs {missing_packages()}; install with: {INSTALL}")
    policy = load_policy()
    problems = make_problems(PROBLEMS, seed=0, sources=SOURCES)
    keep = ("prompt", "response", "score", "correct", "answer", "length", "truncated", "token_entropy")
    rows = {step: [{k: r[k] for k in keep} for r in sample_rollouts(policy, problems, samples=G, max_new_tokens=MAX_NEW,
                                                                    temperature=0.7, seed=0, step=step)]
            for step in range(1, STEPS + 1)}
    return write_jsonl(rows, tmp_path_factory.mktemp("smol") / "rollouts.jsonl")


@pytest.mark.model
def test_real_small_model_rollouts(smol: Path, tmp_path: Path) -> None:
    series = analyze_rollouts(smol).series()
    share = series["token/entropy_high_share"].to_numpy()
    assert 0.1 < share[0] <= 0.2  # the first step's top fifth, by construction (less with ties)
    found = mine(diagnosed(smol, base_log(tmp_path, STEPS)))
    ent = found["high_entropy_tokens"]
    assert ent.status == "ok", ent.message["en"]
    assert ent.evidence["first"] == pytest.approx(float(np.median(share[:3])))
    # the model writes no <think>: the format is not in use, and there is no reasoning to compare answers with
    fmt = found["format_compliance"]
    assert fmt.status == "skipped" and fmt.message["en"].startswith("No rollout has a think segment")
    assert found["answer_in_reasoning"].status == "skipped" and found["think_repetition"].status == "skipped"
    eff = found["effective_batch"]
    values = series["group/effective_batch"].to_numpy()
    assert eff.evidence["last"] == pytest.approx(float(np.median(values[-3:])))
    # a policy that does not change on problems that do not change keeps its signal: no fall is reported
    assert (values > 0).mean() > 0.5 and eff.status in ("ok", "note"), (values, eff.message["en"])


# ---------------------------------------------------------------- constructed failures (real text, edited)

def answer_block(response: str) -> str:
    found = re.findall(r"<answer>.*?</answer>", response, re.S)
    return found[-1] if found else "<answer>\n</answer>"


def answer_text(response: str) -> str:
    return answer_block(response).removeprefix("<answer>").removesuffix("</answer>")


def with_repeated_answer(r: dict[str, Any]) -> dict[str, Any]:
    """The Logic-RL model's own failure before training (a step-0 response printed 51 answer blocks): the
    answer block written twice, which the R1 rule and the run's reward reject."""
    return {**r, "response": r["response"] + "\n" + answer_block(r["response"])}


def degrade(rows: Rows, share: Callable[[int], float]) -> Rows:
    """The first ``share(step)`` of each step's rollouts break the format."""
    out = {}
    for step, recs in rows.items():
        k = round(share(step) * len(recs))
        out[step] = [with_repeated_answer(r) if i < k else r for i, r in enumerate(recs)]
    return out


def test_format_near_zero_on_most_steps_fails(logic: Rows, tmp_path: Path) -> None:
    # constructed: 97 % of the real rollouts of every step get their answer block twice
    rows = degrade(cycled(logic, 12), lambda s: 0.97)
    f = mine(diagnosed(write_dump(rows, tmp_path / "d"), base_log(tmp_path, 12)))["format_compliance"]
    assert f.status == "fail" and f.onset_step == 1 and f.span == (1, 12)
    assert "At 12 of 12 steps (from step 1) at most 10% of rollouts followed" in f.message["en"]


@pytest.mark.parametrize(("broken", "status", "word"), [(0.5, "warn", "drifting"), (1.0, "fail", "no longer follow")])
def test_format_falling_after_it_was_learned(logic: Rows, tmp_path: Path, broken: float, status: str,
                                             word: str) -> None:
    # constructed: real rollouts, then from step 13 a growing share breaks the format, reaching `broken` at 16
    rows = degrade(cycled(logic, 20), lambda s: float(np.clip((s - 12) / 4, 0, 1)) * broken)
    f = mine(diagnosed(write_dump(rows, tmp_path / "d"), base_log(tmp_path, 20)))["format_compliance"]
    assert f.status == status and 13 <= f.onset_step <= 15 and word in f.message["en"], f.message["en"]


def test_agent_rollouts_are_not_held_to_the_one_answer_rule(logic: Rows, tmp_path: Path) -> None:
    # constructed: a search call inside every real response (between think and answer)
    call = "</think>\n<tool_call>search(logic)</tool_call>"
    rows = {s: [{**r, "response": r["response"].replace("</think>", call, 1)} for r in recs]
            for s, recs in cycled(logic, 8).items()}
    f = mine(diagnosed(write_dump(rows, tmp_path / "d"), base_log(tmp_path, 8)))["format_compliance"]
    calls = float(np.median([np.mean(["</think>" in r["response"] for r in recs]) for recs in rows.values()]))
    assert f.status == "skipped" and f"make tool calls ({calls:.3g} per rollout)" in f.message["en"]


def think_of(response: str) -> str:
    found = re.findall(r"<think>(.*?)</think>", response, re.S)
    return found[0] if found else ""


def test_looping_reasoning_fails(logic: Rows, tmp_path: Path) -> None:
    # constructed: from step 8 every real think segment is written out three times over (the loop)
    rows = cycled(logic, 16)
    for step in range(8, 17):
        rows[step] = [{**r, "response": r["response"].replace(think_of(r["response"]), think_of(r["response"]) * 3, 1)}
                      for r in rows[step]]
    f = mine(diagnosed(write_dump(rows, tmp_path / "d"), base_log(tmp_path, 16)))["think_repetition"]
    assert f.status == "fail" and f.onset_step == 8 and "the reasoning is looping" in f.message["en"]
    assert 0.6 < f.evidence["value"] < 0.7  # a text written three times repeats two thirds of its 4-grams


def test_reasoning_padded_as_it_grows_warns(logic: Rows, tmp_path: Path) -> None:
    # constructed: from step 7 on a numbered filler sentence is appended to each think segment, four more
    # copies a step (3 of its 7 four-word phrases repeat: padding, not yet a loop)
    rows = cycled(logic, 16)
    for step in range(7, 17):
        filler = "".join(f" Let me double check formula {j} again." for j in range(4 * (step - 6)))
        rows[step] = [{**r, "response": r["response"].replace("</think>", filler + "</think>", 1)} for r in rows[step]]
    f = mine(diagnosed(write_dump(rows, tmp_path / "d"), base_log(tmp_path, 16)))["think_repetition"]
    assert f.status == "warn" and f.message["en"].startswith("From step") and "length bias" in f.message["en"]
    assert 8 <= f.onset_step <= 12 and f.evidence["length_last"] > 1.3 * f.evidence["length_first"]


def test_think_segment_that_only_states_the_answer_fails(logic: Rows, tmp_path: Path) -> None:
    # constructed: from step 6 each real response's reasoning is replaced by its own answer (the think
    # segment holds nothing but the answer that the answer segment repeats)
    rows = cycled(logic, 14)
    for step in range(6, 15):
        rows[step] = [{**r, "response": f"<think>{answer_text(r['response'])}</think>\n{answer_block(r['response'])}"}
                      for r in rows[step]]
    f = mine(diagnosed(write_dump(rows, tmp_path / "d"), base_log(tmp_path, 14)))["answer_in_reasoning"]
    assert f.status == "fail" and f.onset_step == 6 and f.span == (6, 14), f.message["en"]
    assert "only states the answer" in f.message["en"] and f.layer == "L6"


def test_empty_think_segments_fail(logic: Rows, tmp_path: Path) -> None:
    # constructed: from step 5 every real response keeps its answer but its think segment is emptied —
    # still the R1 format, so the format check passes it, and no answer can be found in an empty segment
    rows = cycled(logic, 12)
    for step in range(5, 13):
        rows[step] = [{**r, "response": f"<think></think>\n{answer_block(r['response'])}"} for r in rows[step]]
    found = mine(diagnosed(write_dump(rows, tmp_path / "d"), base_log(tmp_path, 12)))
    f = found["answer_in_reasoning"]
    assert f.status == "fail" and f.onset_step == 5 and f.span == (5, 12), f.message["en"]
    assert "held a median of 0 words" in f.message["en"] and "no reasoning before the answer" in f.message["en"]
    assert found["format_compliance"].status == "ok"


def test_reasoning_shrinking_onto_the_answer_warns(logic: Rows, tmp_path: Path) -> None:
    # constructed: from step 8 the think segment keeps only its last 30 words followed by the answer
    rows = cycled(logic, 16)
    for step in range(8, 17):
        rows[step] = [{**r, "response": r["response"].replace(
            think_of(r["response"]), " ".join(think_of(r["response"]).split()[-30:]) + "\n"
            + answer_text(r["response"]), 1)} for r in rows[step]]
    f = mine(diagnosed(write_dump(rows, tmp_path / "d"), base_log(tmp_path, 16)))["answer_in_reasoning"]
    assert f.status == "warn" and 8 <= f.onset_step <= 10 and "turning into a statement" in f.message["en"]


def test_answers_that_stop_following_the_reasoning_warn(logic: Rows, tmp_path: Path) -> None:
    # constructed: the first 8 steps' reasoning ends on its answer (appended), the later ones do not
    rows = cycled(logic, 16)
    for step in range(1, 9):
        rows[step] = [{**r, "response": r["response"].replace(
            "</think>", "\nSo:\n" + answer_text(r["response"]) + "</think>", 1)} for r in rows[step]]
    f = mine(diagnosed(write_dump(rows, tmp_path / "d"), base_log(tmp_path, 16)))["answer_in_reasoning"]
    assert f.status == "warn" and 8 <= f.onset_step <= 10 and "do not follow" in f.message["en"], f.message["en"]


def agent_rows(steps: int, copies: Callable[[int], int]) -> Rows:
    """Constructed search-agent rollouts: each of 4 groups × 4 rollouts makes 2 distinct searches, each
    ``copies(step)`` times; the answer is right in half the rollouts (the reward looks fine)."""
    rows: Rows = {}
    for step in range(1, steps + 1):
        rows[step] = []
        for g in range(4):
            for i in range(4):
                calls = "".join(f"<tool_call>search(q{g}-{j})</tool_call>\n"
                                for j in range(2) for _ in range(copies(step)))
                rows[step].append({"prompt": f"question {g}", "score": float(i % 2),
                                   "response": f"<think>look it up</think>\n{calls}<answer>{i % 2}</answer>"})
    return rows


@pytest.mark.parametrize(("copies", "status"), [(lambda s: 1, "ok"), (lambda s: 1 if s < 7 else 2, "fail"),
                                                (lambda s: 1 if s < 7 else 3, "fail")])
def test_repeated_tool_calls(tmp_path: Path, copies: Callable[[int], int], status: str) -> None:
    f = mine(diagnosed(write_dump(agent_rows(14, copies), tmp_path / "d"), base_log(tmp_path, 14)))["tool_call_repeats"]
    assert f.status == status, f.message["en"]
    if status == "fail":
        times = copies(14)
        assert f.onset_step == 7 and f.evidence["times"] == pytest.approx(times)
        assert f"each call is made about {times:.2g} times" in f.message["en"]


#: a call of the real veRL multi-turn dump (tests/rollout/data/verl-gsm8k-multiturn-hecate) that parses, and one
#: of the same dump that does not (its keys without the braces)
GOOD_CALL = '{"name": "calc_gsm8k_reward", "arguments": {"answer": "15"}}'
BAD_CALL = '"name": "calc_gsm8k_reward", "arguments": {"answer": "3.5"}'


@pytest.mark.parametrize(("bad", "status"), [(0, "ok"), (1, "warn"), (3, "fail")])
def test_tool_call_arguments_that_stop_parsing(tmp_path: Path, bad: int, status: str) -> None:
    # 4 groups x 4 rollouts, one call each; from step 7 on, `bad` rollouts of each group of 4 write the broken call
    rows = {s: [{"prompt": f"q{g}", "score": float(i % 2),
                 "response": f"<tool_call>\n{BAD_CALL if s >= 7 and i < bad else GOOD_CALL}\n</tool_call>"}
                for g in range(4) for i in range(4)] for s in range(1, 15)}
    f = mine(diagnosed(write_dump(rows, tmp_path / "d"), base_log(tmp_path, 14)))["tool_call_args"]
    assert f.status == status, f.message["en"]
    if status != "ok":
        assert f.onset_step == 7 and f.evidence["value"] == pytest.approx(1 - bad / 4)


def entropy_rows(steps: int, scale: Callable[[int], float]) -> Rows:
    """Constructed token entropies: 4 groups × 4 rollouts × 40 tokens drawn from an exponential law whose
    mean is ``scale(step)`` (the same law at every step = no squeeze); rewards mixed."""
    rng = np.random.default_rng(0)
    return {s: [{"prompt": f"p{g}", "response": f"r{i}", "score": float(i % 2),
                 "token_entropy": (rng.exponential(scale(s), 40)).tolist()} for g in range(4) for i in range(4)]
            for s in range(1, steps + 1)}


@pytest.mark.parametrize(("late", "status", "template"), [(1.0, "ok", "ok"), (0.55, "warn", "fall"),
                                                          (0.2, "fail", "collapse"), (2.2, "warn", "rise")])
def test_high_entropy_tokens(tmp_path: Path, late: float, status: str, template: str) -> None:
    rows = entropy_rows(15, lambda s: 1.0 if s <= 5 else late)
    path = write_jsonl(rows, tmp_path / "r.jsonl")
    f = mine(diagnosed(path, base_log(tmp_path, 15)))["high_entropy_tokens"]
    assert f.status == status, f.message["en"]
    if status != "ok":
        assert 6 <= f.onset_step <= 7
        # the words follow the template: "fell" for a fall and a collapse, "rose" for a rise
        assert ("rose" if template == "rise" else "fell") in f.message["en"]


def score_rows(steps: int, mixed: Callable[[int], int], groups: int = 8) -> Rows:
    """Constructed outcomes: at each step ``mixed(step)`` of ``groups`` groups of 4 have mixed rewards, the
    others are all wrong."""
    return {s: [{"prompt": f"p{g}", "response": f"r{g}-{i}", "score": float(g < mixed(s) and i % 2 == 0)}
                for g in range(groups) for i in range(4)] for s in range(1, steps + 1)}


@pytest.mark.parametrize(("mixed", "status", "word"), [
    (lambda s: 8, "ok", "100% of each step's rollouts"),
    (lambda s: 8 if s <= 5 else 2, "warn", "fell from 100% to 25%"),
    (lambda s: 4, "note", "about 4 prompt groups (16 rollouts) a step"),
    (lambda s: 0 if s % 3 else 4, "fail", "At 10 of 15 steps (from step 1) no rollout carried a learning signal"),
])
def test_effective_batch(tmp_path: Path, mixed: Callable[[int], int], status: str, word: str) -> None:
    d = diagnosed(write_dump(score_rows(15, mixed), tmp_path / "d"), base_log(tmp_path, 15))
    f = mine(d)["effective_batch"]
    assert f.status == status and word in f.message["en"], f.message["en"]
    if status == "note":
        assert d.layers["L3"] != "note"  # a note is advice, not a verdict


# ---------------------------------------------------------------- every template, both languages

N = 30


def flat(v: float) -> np.ndarray:
    return np.full(N, v)


def step(a: float, b: float, at: int = 20) -> np.ndarray:
    out: np.ndarray = np.where(np.arange(N) < at, a, b)
    return out


def ramp(a: float, b: float) -> np.ndarray:
    out: np.ndarray = np.linspace(a, b, N)
    return out


THINK = {"rollout/think_length/mean": flat(200)}
CASES: dict[tuple[str, str], Callable[[], Run]] = {
    ("format_compliance", "ok"): lambda: make_run({"rollout/format_compliance": flat(0.97), **THINK}),
    ("format_compliance", "absent"): lambda: make_run({"rollout/format_compliance": flat(0.02), **THINK}),
    ("format_compliance", "broke"): lambda: make_run({"rollout/format_compliance": step(0.95, 0.0), **THINK}),
    ("format_compliance", "drift"): lambda: make_run({"rollout/format_compliance": step(0.95, 0.5), **THINK}),
    ("format_compliance", "below"): lambda: make_run({"rollout/format_compliance": flat(0.8), **THINK}),
    ("format_compliance", "unused"): lambda: make_run({"rollout/format_compliance": flat(0.0),
                                                       "rewards/format_reward/mean": flat(0.0)}, framework="trl"),
    ("format_compliance", "tools"): lambda: make_run({"rollout/format_compliance": flat(0.0), **THINK,
                                                      "rollout/tool_calls/mean": flat(2.0)}),
    ("think_repetition", "ok"): lambda: make_run({"rollout/think_repetition": flat(0.05)}),
    ("think_repetition", "loop_fail"): lambda: make_run({"rollout/think_repetition": step(0.05, 0.6)}),
    ("think_repetition", "loop_warn"): lambda: make_run({"rollout/think_repetition": step(0.05, 0.35)}),
    ("think_repetition", "rising"): lambda: make_run({"rollout/think_repetition": ramp(0.05, 0.25)}),
    ("think_repetition", "rising_long"): lambda: make_run({"rollout/think_repetition": ramp(0.05, 0.25),
                                                           "rollout/think_length/mean": ramp(200, 400)}),
    ("answer_in_reasoning", "ok"): lambda: make_run({"rollout/answer_in_reasoning": flat(0.5),
                                                     "rollout/think_length/p50": flat(200)}),
    ("answer_in_reasoning", "copy"): lambda: make_run({"rollout/answer_in_reasoning": step(0.5, 1.0),
                                                       "rollout/think_length/p50": step(200, 8),
                                                       "rollout/answer_length/p50": flat(5)}),
    ("answer_in_reasoning", "shrinking"): lambda: make_run({"rollout/answer_in_reasoning": step(0.5, 0.95),
                                                            "rollout/think_length/mean": step(300, 60),
                                                            "rollout/think_length/p50": step(300, 60)}),
    ("answer_in_reasoning", "empty"): lambda: make_run({"rollout/answer_in_reasoning": step(0.5, 0.2),
                                                        "rollout/think_length/p50": step(200, 2)}),
    ("answer_in_reasoning", "no_answers"): lambda: make_run({"rollout/think_length/p50": flat(40)}),
    ("answer_in_reasoning", "apart"): lambda: make_run({"rollout/answer_in_reasoning": step(0.9, 0.4)}),
    ("tool_call_repeats", "ok"): lambda: make_run({"rollout/tool_calls/repeat_rate": flat(0.02),
                                                   "rollout/tool_calls/mean": flat(1.2)}),
    ("tool_call_repeats", "repeat_fail"): lambda: make_run({"rollout/tool_calls/repeat_rate": step(0.02, 0.7),
                                                            "rollout/tool_calls/mean": step(1.0, 3.5)}),
    ("tool_call_repeats", "repeat_warn"): lambda: make_run({"rollout/tool_calls/repeat_rate": step(0.02, 0.3),
                                                            "rollout/tool_calls/mean": flat(2.0)}),
    ("tool_call_repeats", "rising"): lambda: make_run({"rollout/tool_calls/repeat_rate": ramp(0.0, 0.19),
                                                       "rollout/tool_calls/mean": flat(2.0)}),
    ("high_entropy_tokens", "ok"): lambda: make_run({"token/entropy_high_share": flat(0.2)}),
    ("high_entropy_tokens", "collapse"): lambda: make_run({"token/entropy_high_share": step(0.2, 0.01)}),
    ("high_entropy_tokens", "fall"): lambda: make_run({"token/entropy_high_share": step(0.2, 0.08)}),
    ("high_entropy_tokens", "rise"): lambda: make_run({"token/entropy_high_share": step(0.2, 0.5),
                                                       "actor/entropy": step(0.3, 0.9)}),
    ("high_entropy_tokens", "short"): lambda: make_run({"token/entropy_high_share": flat(0.2)[:5]}),
    ("high_entropy_tokens", "no_tail"): lambda: make_run({"token/entropy_high_share": flat(0.0)}),
    ("effective_batch", "ok"): lambda: make_run({"group/effective_batch": flat(0.9)}),
    ("effective_batch", "none"): lambda: make_run({"group/effective_batch": step(0.5, 0.0, at=10)}),
    ("effective_batch", "shrinking"): lambda: make_run({"group/effective_batch": step(0.9, 0.3)}),
    ("effective_batch", "small"): lambda: make_run({"group/effective_batch": flat(0.5),
                                                    "group/effective_batch/groups": flat(16),
                                                    "group/size/mean": flat(8)}),
    ("effective_batch", "small_share"): lambda: make_run({"group/effective_batch": flat(0.5)}),
    ("tool_call_args", "ok"): lambda: make_run({"rollout/tool_calls/valid_args": flat(0.988)}),
    ("tool_call_args", "invalid_fail"): lambda: make_run({"rollout/tool_calls/valid_args": step(0.99, 0.3)}),
    ("tool_call_args", "invalid_warn"): lambda: make_run({"rollout/tool_calls/valid_args": step(0.99, 0.8)}),
    ("tool_call_args", "falling"): lambda: make_run({"rollout/tool_calls/valid_args": ramp(1.0, 0.92)}),
    ("think_entropy_collapse", "ok"): lambda: make_run({"rollout/think_entropy/mean": flat(0.8),
                                                        "rollout/answer_entropy/mean": flat(0.3)}),
    ("think_entropy_collapse", "think_only"): lambda: make_run({"rollout/think_entropy/mean": step(0.8, 0.2),
                                                                "rollout/answer_entropy/mean": flat(0.3)}),
    ("think_entropy_collapse", "think"): lambda: make_run({"rollout/think_entropy/mean": step(0.8, 0.2)}),
    ("think_entropy_collapse", "both"): lambda: make_run({"rollout/think_entropy/mean": step(0.8, 0.2),
                                                          "rollout/answer_entropy/mean": step(0.3, 0.1)}),
    ("think_entropy_collapse", "short"): lambda: make_run({"rollout/think_entropy/mean": flat(0.8)[:5]}),
    ("tool_output_ignored", "ok"): lambda: make_run({"rollout/tool_response/overlap": flat(0.42)}),
    ("tool_output_ignored", "ignored"): lambda: make_run({"rollout/tool_response/overlap": step(0.42, 0.05)}),
    ("tool_output_ignored", "shorter"): lambda: make_run({"rollout/tool_response/overlap": flat(0.42),
                                                          "rollout/tool_response/think_after": step(60, 8),
                                                          "rollout/tool_response/think_before": flat(30)}),
    ("tool_output_ignored", "both"): lambda: make_run({"rollout/tool_response/overlap": step(0.42, 0.05),
                                                       "rollout/tool_response/think_after": step(60, 8)}),
    ("tool_output_ignored", "short"): lambda: make_run({"rollout/tool_response/overlap": flat(0.42)[:5]}),
}


def outcomes(run: Run, check_id: str) -> list[Outcome]:
    check = {c.id: c for c in load_checks()}[check_id]
    return check.fn(RunView(run), check.params)


@pytest.mark.parametrize("case", sorted(CASES), ids=lambda c: f"{c[0]}-{c[1]}")
def test_every_template_formats_in_both_languages(case: tuple[str, str]) -> None:
    check_id, template = case
    run = CASES[case]()
    assert [o.template for o in outcomes(run, check_id)] == [template]
    f = finding(diagnose(run), check_id)
    for lang in ("en", "zh"):
        assert f.message[lang] and "{" not in f.message[lang] and "}" not in f.message[lang], f.message[lang]
        assert f.title[lang] and f.advice[lang] and "nan" not in f.message[lang]


def test_the_cases_cover_every_template_and_the_records_are_complete() -> None:
    checks = {c.id: c for c in load_checks() if c.id in MINE}
    assert set(checks) == set(MINE)
    layers = {"answer_in_reasoning": "L6", "effective_batch": "L3"}
    for cid, check in checks.items():
        assert check.layer == layers.get(cid, "L2") and check.families == ("rl",) and check.rule, cid
        assert set(check.en.messages) == set(check.zh.messages) == {t for c, t in CASES if c == cid}, cid
        assert all(isinstance(v, (int, float)) for v in check.params.values()), cid


def test_statuses_match_their_words() -> None:
    # a finding's words never contradict its status: the failures name what broke, the notes what could be
    # better, the ok messages no failure (spot checks of the phrases a reader acts on)
    said: dict[str, Mapping[str, Sequence[str]]] = {
        "fail": {"en": ("looping", "taught the policy nothing", "only states the answer", "no reasoning before",
                        "no longer follow",
                        "not producing the format", "near-deterministic", "redundant calls", "most calls fail")},
        "note": {"en": ("still break it", "generated for nothing", "not in the reasoning alone")},
    }
    for (cid, template), build in CASES.items():
        out = outcomes(build(), cid)[0]
        text = finding(diagnose(build()), cid).message["en"]
        if out.status in said:
            assert any(w in text for w in said[out.status]["en"]), (cid, template, text)
        if out.status == "ok":
            assert not any(w in text for w in said["fail"]["en"]), (cid, template, text)


def test_advice_follows_what_was_found() -> None:
    def advice(case: tuple[str, str], lang: str = "en") -> str:
        return str(finding(diagnose(CASES[case]()), case[0]).advice[lang])

    assert advice(("format_compliance", "tools")).startswith("Judge agent rollouts by their tool use")
    assert "Nothing to do if the run does not ask" in advice(("format_compliance", "unused"))
    assert "system prompt or chat template asks for" in advice(("format_compliance", "absent"))
    assert "learned and then lost" in advice(("format_compliance", "broke"))
    assert "shortcut" in advice(("answer_in_reasoning", "copy"))
    assert "\\boxed{…}" in advice(("answer_in_reasoning", "apart"))
    assert advice(("effective_batch", "none")).startswith("No rollout of those steps")
    assert "先检查 reward 函数" in advice(("effective_batch", "none"), "zh")
    assert "Lower the learning rate or the entropy bonus" in advice(("high_entropy_tokens", "rise"))
    assert "clip higher" in advice(("high_entropy_tokens", "fall")) and "clip higher" not in advice(
        ("high_entropy_tokens", "rise"))


def test_five_steps_are_read_for_their_level_not_for_a_change() -> None:
    # a start and an end of three steps each need six: five steps are one level, the median of all
    run = make_run({"rollout/format_compliance": [0.95, 0.95, 0.5, 0.5, 0.5], **THINK,
                    "token/entropy_high_share": [0.2, 0.2, 0.05, 0.05, 0.05]})
    assert [o.template for o in outcomes(run, "format_compliance")] == ["below"]
    assert [o.status for o in outcomes(run, "high_entropy_tokens")] == ["skipped"]
    longer = make_run({"rollout/format_compliance": [0.95, 0.95, 0.95, 0.5, 0.5, 0.5], **THINK})
    assert [o.template for o in outcomes(longer, "format_compliance")] == ["drift"]


def test_thresholds_come_from_the_config() -> None:
    from rlvitals.checks.config import CheckSettings, DiagnoseConfig

    run = make_run({"rollout/format_compliance": flat(0.8), **THINK})
    assert finding(diagnose(run), "format_compliance").status == "note"
    cfg = DiagnoseConfig({"format_compliance": CheckSettings(params={"high": 0.75})})
    assert finding(diagnose(run, cfg), "format_compliance").status == "ok"
