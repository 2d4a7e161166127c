"""analyze_rollouts and `rlvitals rollouts`: per-step metrics, overall, skipped families, JSON
schema, and rollout metrics joining the diagnosis."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import orjson
import polars as pl
import pytest

import rlvitals
from rlvitals.cli import main
from rlvitals.errors import InputError
from rlvitals.rollout.analysis import step_json
from rlvitals.rollout.passk import pass_at_k


def _dump(folder: Path, steps: int = 3, groups: int = 4, n: int = 4, seed: int = 0) -> list[dict]:
    """A veRL rollout dump folder, written as veRL writes it (one JSON object per line)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for step in range(1, steps + 1):
        lines = []
        for g in range(groups):
            p = [0.0, 1.0, 0.5, 0.25][g % 4]
            for _ in range(n):
                ok = bool(rng.random() < p)
                answer = str(2 * g if ok else -1)
                row = {"input": f"Question {g}: what is {g}+{g}?",
                       "output": f"<think>add</think><answer>{answer}</answer>",
                       "gts": str(2 * g), "score": float(ok), "step": step, "acc": ok, "pred": answer}
                lines.append(json.dumps(row, ensure_ascii=False))
                rows.append(row)
        (folder / f"{step}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return rows


def test_per_step_metrics_match_a_plain_computation(tmp_path: Path) -> None:
    rows = _dump(tmp_path / "dump")
    a = rlvitals.analyze_rollouts(tmp_path / "dump", ks=(1, 2, 4))
    assert a.steps["step"].to_list() == [1, 2, 3] and a.steps["groups"].to_list() == [4, 4, 4]
    for step in (1, 2, 3):
        mine = [r for r in rows if r["step"] == step]
        c = np.array([sum(r["acc"] for r in mine if r["input"].startswith(f"Question {g}:")) for g in range(4)])
        n = np.full(4, 4)
        got = a.steps.filter(a.steps["step"] == step)
        assert got["pass@2"][0] == pytest.approx(float(pass_at_k(n, c, 2).mean()), abs=1e-12)
        assert got["group/zero_std/share"][0] == pytest.approx(float(((c == 0) | (c == 4)).mean()))
    assert a.overall["groups"] == 12 and a.overall["rollouts"] == 48
    assert any(s.startswith("tokens:") for s in a.skipped)
    assert "counted in characters" in a.notes[-1]


def test_cli_json_schema(tmp_path: Path) -> None:
    _dump(tmp_path / "dump")
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", "--json", "--k", "1,2,4", str(tmp_path / "dump")], out=out, err=err) == 0
    doc = orjson.loads(out.getvalue())
    step = doc["steps"][0]
    assert set(step) >= {"step", "groups", "rollouts", "pass@k", "maj@k", "zero_variance", "metrics"}
    assert set(step["pass@k"]) == {"1", "2", "4"}
    assert set(step["zero_variance"]) >= {"share", "all_correct", "all_wrong"}
    assert step["group_sizes"] == {"4": 4}
    assert step["metrics"]["group/size/below_mode"] == 0 and step["metrics"]["group/size/min"] == 4
    assert doc["overall"]["rollouts"] == 48


def test_every_k_up_to_the_largest_group(tmp_path: Path) -> None:
    _dump(tmp_path / "dump")
    a = rlvitals.analyze_rollouts(tmp_path / "dump", ks="all")
    assert a.ks == (1, 2, 3, 4)
    n, c = np.full(4, 4), np.array([0, 1, 2, 4])
    b = rlvitals.analyze_rollouts([{"step": 0, "prompt": f"q{g}", "score": float(i < c[g])}
                                   for g in range(4) for i in range(4)], ks="all")
    for k in range(1, 5):
        assert b.steps[f"pass@{k}"][0] == pytest.approx(float(pass_at_k(n, c, k).mean()), abs=1e-12)
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", "--json", "--k", "all", str(tmp_path / "dump")], out=out, err=err) == 0, err.getvalue()
    assert list(orjson.loads(out.getvalue())["steps"][0]["pass@k"]) == ["1", "2", "3", "4"]


def test_cli_text_and_errors(tmp_path: Path) -> None:
    _dump(tmp_path / "dump")
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(tmp_path / "dump")], out=out, err=err) == 0
    # groups of 4: pass@16 has no value anywhere, so the view goes up to pass@4
    assert "pass@4" in out.getvalue() and "pass@16" not in out.getvalue()
    assert "not computed: " in out.getvalue() and "--verbose lists them" in out.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", "--k", "1,x", str(tmp_path / "dump")], out=out, err=err) == 2
    assert err.getvalue() == "rlvitals: --k '1,x': expected comma-separated whole numbers like 1,2,4,8, or all\n"
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", "--k", "0,2", str(tmp_path / "dump")], out=out, err=err) == 2
    assert "every k must be at least 1" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(tmp_path / "nowhere")], out=out, err=err) == 2 and "nowhere" in err.getvalue()


def test_generic_table_with_column_options(tmp_path: Path) -> None:
    f = tmp_path / "samples.csv"
    rows = "".join(f"1,p{g},{float(s == g)},t{s}\n" for g in range(2) for s in range(3))
    f.write_text("it,prompt_id,reward,text\n" + rows)
    out, err = io.StringIO(), io.StringIO()
    code = main(["rollouts", "--json", "--step", "it", "--group", "prompt_id", "--score", "reward",
                 "--response", "text", "--k", "1,3", str(f)], out=out, err=err)
    assert code == 0, err.getvalue()
    step = orjson.loads(out.getvalue())["steps"][0]
    assert step["groups"] == 2 and step["pass@k"]["3"] == 1.0


def test_rollout_metrics_join_the_diagnosis(tmp_path: Path) -> None:
    _dump(tmp_path / "dump", steps=40, groups=8, n=4)
    log = tmp_path / "run.jsonl"
    log.write_text("".join(f'{{"step":{s},"data":{{"actor/entropy":{0.5 - s * 0.001},"critic/score/mean":0.5}}}}\n'
                           for s in range(1, 41)))
    out, err = io.StringIO(), io.StringIO()
    assert main(["diagnose", "--json", "--rollouts", str(tmp_path / "dump"), str(log)], out=out, err=err) == 0
    findings = {f["check"]: f for f in orjson.loads(out.getvalue())["runs"][0]["findings"]}
    assert findings["zero_variance_groups"]["status"] != "skipped"
    assert findings["passk_gap"]["status"] != "skipped"


def test_dropped_samples_show_in_the_size_histogram(tmp_path: Path) -> None:
    _dump(tmp_path / "dump", steps=1, groups=4, n=4)
    lines = (tmp_path / "dump" / "1.jsonl").read_text().splitlines()
    (tmp_path / "dump" / "1.jsonl").write_text("\n".join(lines[:-3]) + "\n")  # the last group lost 3 samples
    a = rlvitals.analyze_rollouts(tmp_path / "dump", ks=(1,))
    row = a.steps.row(0, named=True)
    assert (row["group/size/min"], row["group/size/max"], row["group/size/below_mode"]) == (1, 4, 1)
    assert step_json(row, (1,))["group_sizes"] == {"4": 3, "1": 1}
    assert "group_sizes" not in a.series().columns


def test_reward_weights_need_a_path() -> None:
    with pytest.raises(InputError, match=r"reward_weights apply when reading TRL completion files, not to a list"):
        rlvitals.analyze_rollouts([{"prompt": "q", "response": "a", "score": 1.0}], reward_weights=[1.0])


def test_undefined_values_join_the_run_as_not_logged() -> None:
    # groups of 4 have no pass@8: in the Run that must read as "not logged", not as a logged NaN
    # (which the NaN/Inf check would rightly call a failure)
    from rlvitals.diagnosis import diagnose
    from rlvitals.synthetic.pathologies import Spec, scenario
    from rlvitals.synthetic.scenarios import run_from_series

    rows = [{"step": s, "prompt": f"p{g}", "response": f"r{i}", "score": float((s + g + i) % 2)}
            for s in range(1, 61) for g in range(3) for i in range(4)]
    analysis = rlvitals.analyze_rollouts(rows, ks=(1, 2, 8))
    assert analysis.steps["pass@8"].is_nan().all()
    series = analysis.series()
    assert "pass@8" not in series.columns and "pass@2" in series.columns
    assert not any(series.get_column(c).is_nan().any() for c, t in series.schema.items() if t.is_float())
    run = run_from_series(scenario(Spec(steps=60, seed=1))).with_series(series)
    nan_check = [f for f in diagnose(run).findings if f.check == "nan_inf"]
    assert nan_check and all(f.status == "ok" for f in nan_check)


def test_cli_reward_weights_and_their_errors(tmp_path: Path) -> None:
    folder = tmp_path / "completions"
    folder.mkdir()
    pl.DataFrame({"step": ["1"] * 4, "prompt": ["a", "a", "b", "b"], "completion": ["x", "y", "z", "w"],
                  "accuracy_reward": [1.0, 0.0, 1.0, 1.0], "format_reward": [1.0, 1.0, 0.0, 1.0],
                  "advantage": [0.0] * 4}).write_parquet(folder / "completions_00001.parquet")
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", str(tmp_path), "--json", "--reward-weights", "accuracy_reward=1,format_reward=0"],
                out, err) == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    # with format weighted 0 the score is the accuracy alone: groups a (1, 0) and b (1, 1)
    assert doc["steps"][0]["zero_variance"]["share"] == 0.5
    err = io.StringIO()
    assert main(["rollouts", str(tmp_path), "--reward-weights", "1,x"], io.StringIO(), err) == 2
    assert "expected name=weight pairs" in err.getvalue()
    err = io.StringIO()
    assert main(["rollouts", str(tmp_path), "--reward-weights", "nosuch=1"], io.StringIO(), err) == 2
    assert "nosuch" in err.getvalue()


def _reading_rows() -> list[dict]:
    """Step 1: longer answers are right in both groups; step 2: longer answers are wrong."""
    rows = []
    for step, sign in ((1, 1), (2, -1)):
        for g in range(2):
            for i, length in enumerate((10, 20, 30, 40)):
                ok = (i >= 2) if sign > 0 else (i < 2)
                rows.append({"step": step, "prompt": f"p{g}", "response": "x" * length, "correct": ok,
                             "score": float(ok)})
    return rows


def test_length_reading_per_step_overall_and_json(tmp_path: Path) -> None:
    a = rlvitals.analyze_rollouts(_reading_rows(), ks=(1,))
    assert a.steps["rollout/length_reading"].to_list() == ["longer_more_correct", "longer_less_correct"]
    assert a.steps["rollout/length_reading/groups"].to_list() == [2, 2]
    # over the whole table the four groups cancel out: longer is neither better nor worse
    assert a.overall["rollout/length_reading"] == "no_change" and a.overall["rollout/length_reading/groups"] == 4
    assert a.overall["rollout/length_correct_corr"] == pytest.approx(0.0, abs=1e-12)
    assert "rollout/length_reading" not in a.series().columns
    assert "rollout/length_reading/groups" not in a.series().columns
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _reading_rows()))
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", "--json", "--k", "1", str(path)], out=out, err=err) == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    first = doc["steps"][0]["length_reading"]
    assert first == {"reading": "longer_more_correct", "corr": pytest.approx(0.8944271909999159), "tol": 0.1,
                     "groups": 2}
    assert doc["overall"]["length_reading"]["reading"] == "no_change"
    assert "rollout/length_reading" not in doc["steps"][0]["metrics"]
    assert doc["steps"][0]["metrics"]["rollout/length_correct_corr"] == first["corr"]


def test_length_reading_is_null_without_the_length_family() -> None:
    # scores outside [-1, 1] leave correctness unknown, so the length family cannot run
    rows = [{k: v for k, v in r.items() if k != "correct"} | {"score": 2.0 * r["correct"]} for r in _reading_rows()]
    b = rlvitals.analyze_rollouts(rows, ks=(1,))
    assert "rollout/length_reading" not in b.steps.columns
    assert step_json(b.steps.row(0, named=True), (1,))["length_reading"] is None


def _tool_rows() -> list[dict]:
    calls = {0: [], 1: ["search(a)"], 2: ["search(a)", "search(b)"], 3: ["search(a)"] * 3}
    return [{"step": s, "prompt": f"p{g}", "response": "".join(f"<tool_call>{c}</tool_call>" for c in calls[n]),
             "score": float(n == 1)} for s in (1, 2) for g in range(2) for n in ((0, 1, 2, 3) if s == 1 else (3, 3))]


def test_tool_call_cap_gives_the_share_at_the_cap(tmp_path: Path) -> None:
    rows = _tool_rows()
    a = rlvitals.analyze_rollouts(rows, ks=(1,), tool_call_cap=2)
    for step in (1, 2):
        counts = [r["response"].count("<tool_call>") for r in rows if r["step"] == step]
        want = sum(c >= 2 for c in counts) / len(counts)
        assert a.steps.filter(a.steps["step"] == step)["rollout/tool_calls/at_cap"][0] == want
    assert a.overall["rollout/tool_calls/at_cap"] == sum(r["response"].count("<tool_call>") >= 2 for r in rows) / 12
    assert not any(s.startswith("rollout/tool_calls/at_cap") for s in a.skipped)
    b = rlvitals.analyze_rollouts(rows, ks=(1,))
    assert "rollout/tool_calls/at_cap" not in b.steps.columns
    assert "rollout/tool_calls/at_cap: needs the rollouts' tool-call cap: --tool-cap N" in b.skipped
    with pytest.raises(ValueError, match=r"tool_call_cap must be a whole number >= 1 .*got 0"):
        rlvitals.analyze_rollouts(rows, tool_call_cap=0)
    path = tmp_path / "tools.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", "--json", "--k", "1", "--tool-cap", "3", str(path)], out=out, err=err) == 0
    doc = json.loads(out.getvalue())
    assert [s["metrics"]["rollout/tool_calls/at_cap"] for s in doc["steps"]] == [0.25, 1.0]
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", "--tool-cap", "0", str(path)], out=out, err=err) == 2
    assert err.getvalue() == ("rlvitals: --tool-cap 0: the cap is the most tool calls a rollout may make, "
                              "a whole number >= 1\n")


def test_custom_segment_tags_through_the_api_and_the_cli(tmp_path: Path) -> None:
    from rlvitals.rollout.tags import SegmentTags

    texts = ["[THINK]add 2 and 2 so 4[/THINK] <final>4</final>", "[THINK]so[/THINK]<final>5</final><call>f(x)</call>",
             "<think>x</think><answer>4</answer>"]
    rows = [{"step": 1, "prompt": "2+2", "response": t, "score": float(i == 0)} for i, t in enumerate(texts)]
    tags = SegmentTags(think=("[THINK]", "[/THINK]"), answer=("<final>", "</final>"), tool_call=("<call>", "</call>"))
    a = rlvitals.analyze_rollouts(rows, ks=(1,), segment_tags=tags)
    row = a.steps.row(0, named=True)
    assert row["rollout/format_compliance"] == pytest.approx(1 / 3)  # the call after the answer breaks rollout 2
    assert row["rollout/think_length/mean"] == 3.5 and row["rollout/think_length/max"] == 6  # 6 and 1 words
    assert row["rollout/think_length/p50"] == 3.5 and row["rollout/think_length/p10"] == pytest.approx(1.5)
    assert row["rollout/answer_in_reasoning"] == 0.5 and row["rollout/tool_calls/mean"] == pytest.approx(1 / 3)
    default = rlvitals.analyze_rollouts(rows, ks=(1,)).steps.row(0, named=True)
    assert default["rollout/think_length/max"] == 1 and default["rollout/tool_calls/mean"] == 0
    path = tmp_path / "tags.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, err = io.StringIO(), io.StringIO()
    argv = ["rollouts", "--json", "--k", "1", "--think-tag", "[THINK] [/THINK]", "--answer-tag", "final",
            "--tool-tag", "call", str(path)]
    assert main(argv, out=out, err=err) == 0, err.getvalue()
    metrics = json.loads(out.getvalue())["steps"][0]["metrics"]
    seg = ("rollout/think", "rollout/answer", "rollout/tool", "rollout/format")
    assert {k: metrics[k] for k in row if k.startswith(seg) and row[k] is not None} == pytest.approx(
        {k: v for k, v in row.items() if k.startswith(seg) and v is not None})
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", "--think-tag", "a b c", str(path)], out=out, err=err) == 2
    assert err.getvalue() == ("rlvitals: --think-tag 'a b c' is not a segment tag: give a tag name (think means "
                              "<think>…</think>) or the opening and closing tags separated by a space "
                              "('[THINK] [/THINK]')\n")
    err = io.StringIO()
    assert main(["rollouts", "--think-tag", "answer", str(path)], out=io.StringIO(), err=err) == 2
    assert "need tags of their own" in err.getvalue()


def test_max_response_length_marks_truncation_from_token_counts(tmp_path: Path) -> None:
    lengths = {1: [100, 512, 600, 30], 2: [512, 512, 10, 20]}
    flags = {1: [None, None, False, None], 2: [None, True, None, None]}  # a flag, when given, wins
    rows = [{"step": s, "prompt": f"p{i % 2}", "response": "x", "score": float(i % 2), "correct": bool(i % 2),
             "length": n, "truncated": f}
            for s in lengths for i, (n, f) in enumerate(zip(lengths[s], flags[s], strict=True))]
    a = rlvitals.analyze_rollouts(rows, ks=(1,), max_response_length=512)
    for step in lengths:
        want = [f if f is not None else n >= 512 for n, f in zip(lengths[step], flags[step], strict=True)]
        assert a.steps.filter(a.steps["step"] == step)["rollout/truncation_share"][0] == sum(want) / len(want)
    assert a.overall["rollout/truncation_share"] == 3 / 8
    assert a.rollouts is not None and a.rollouts.table["truncated"].null_count() == 0
    # without the limit only the flags count, nulls left out
    b = rlvitals.analyze_rollouts(rows, ks=(1,))
    assert b.steps["rollout/truncation_share"].to_list() == [0.0, 1.0]
    # no flag and no limit: the key says what it needs
    c = rlvitals.analyze_rollouts([{k: v for k, v in r.items() if k != "truncated"} for r in rows], ks=(1,))
    assert "rollout/truncation_share" not in c.steps.columns
    assert ("rollout/truncation_share: needs a 'truncated' column (--truncated COLUMN), or --max-response-length N "
            "with token counts in 'length'") in c.skipped
    # character lengths are never compared with a token limit
    chars = [{k: v for k, v in r.items() if k not in ("truncated", "length")} for r in rows]
    d = rlvitals.analyze_rollouts(chars, ks=(1,), max_response_length=1)
    assert "rollout/truncation_share" not in d.steps.columns
    assert any(s.startswith("rollout/truncation_share: --max-response-length counts tokens, but the rollouts carry no "
                            "token counts") for s in d.skipped)
    with pytest.raises(ValueError, match=r"max_response_length must be a whole number of tokens >= 1, got 0"):
        rlvitals.analyze_rollouts(rows, max_response_length=0)
    path = tmp_path / "len.jsonl"
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "truncated"}) + "\n" for r in rows))
    out, err = io.StringIO(), io.StringIO()
    assert main(["rollouts", "--json", "--k", "1", "--max-response-length", "512", str(path)], out, err) == 0
    assert [s["metrics"]["rollout/truncation_share"] for s in json.loads(out.getvalue())["steps"]] == [0.5, 0.5]
    err = io.StringIO()
    assert main(["rollouts", "--max-response-length", "-3", str(path)], io.StringIO(), err) == 2
    assert err.getvalue() == "rlvitals: --max-response-length -3: the limit is a number of tokens >= 1\n"


def test_every_key_left_out_says_what_it_needs() -> None:
    rows = [{"step": 1, "prompt": f"p{g}", "response": f"r {i}", "score": float(i == g)} for g in range(2)
            for i in range(3)]
    a = rlvitals.analyze_rollouts(rows, ks=(1, 2))
    assert a.skipped == [
        "step_groups: step-level groups need the rollout column(s) ['states']; the table has "
        "['step', 'group', 'sample', 'prompt', 'response', 'score', 'correct', 'length']",
        "id_ood: this metric needs the rollout column(s) ['split']; the table has "
        "['step', 'group', 'sample', 'prompt', 'response', 'score', 'correct', 'length']",
        "sources: per-source metrics need the rollout column(s) ['source'] (veRL's data_source; --source COLUMN "
        "for other files); the table has ['step', 'group', 'sample', 'prompt', 'response', 'score', 'correct', "
        "'length']",
        "tokens: token metrics need 'token_entropy', or 'token_logprob' with 'token_advantage' (per-token lists); "
        "the table has ['step', 'group', 'sample', 'prompt', 'response', 'score', 'correct', 'length']",
        "segment_entropy: needs the per-token entropies 'token_entropy' and the token strings 'tokens' (the decoded "
        "text of each response token)",
        "maj@{k}, reasoning/self_consistency_gap@{k}: needs the rollout column 'answer' (extracted final answers: "
        "veRL pred, a \\boxed{…} or '#### N' in the responses, --answer COLUMN); they are NaN without it",
        "diversity/answer_entropy: needs the rollout column 'answer' (veRL pred, a \\boxed{…} or '#### N' in the "
        "responses, --answer COLUMN)",
        "diversity/action_edit_distance: needs the rollout column 'actions'",
        "diversity/state_coverage: needs the rollout column 'states'",
        "rollout/truncation_share: needs a 'truncated' column (--truncated COLUMN), or --max-response-length N "
        "with token counts in 'length'",
        "prompt/difficulty/{easy,medium,hard}/adv_share: needs the rollout column 'advantage' (the sequence "
        "advantage: TRL completions carry it)",
        "rollout/tool_calls/at_cap: needs the rollouts' tool-call cap: --tool-cap N",
    ]
    # every key listed is indeed absent (or, for maj@k, NaN)
    assert a.steps["maj@2"].is_nan().all()
    for key in ("diversity/answer_entropy", "diversity/action_edit_distance", "diversity/state_coverage",
                "rollout/truncation_share", "prompt/difficulty/easy/adv_share", "rollout/tool_calls/at_cap"):
        assert key not in a.steps.columns, key
    assert "prompt/difficulty/easy/share" in a.steps.columns  # the reader derived `correct` from the score


def test_family_messages_say_either_column_is_enough() -> None:
    from rlvitals.rollout import prompts, tokens

    df = pl.DataFrame({"step": [1], "group": ["a"], "sample": [0], "response": ["x"]})
    with pytest.raises(ValueError, match=r"prompt metrics need a 'score' or a 'correct' column \(either is enough\)"):
        prompts.update(None, df)
    with pytest.raises(ValueError, match=r"token metrics need 'token_entropy', or 'token_logprob' with 'token_adv"):
        tokens.update(None, df)
    only_correct = rlvitals.analyze_rollouts([{"step": 1, "prompt": "q", "response": "x", "correct": True}])
    assert not any(s.startswith("prompts:") for s in only_correct.skipped)
    assert "prompt/reward_gini, prompt/top_share: needs the rollout column 'score'" in only_correct.skipped


# --- progress: what a long analysis tells as it goes -------------------------------------------

FAMILIES = ["group", "step_groups", "diversity", "segments", "length", "prompts", "id_ood", "sources", "tokens",
            "tool_turns", "segment_entropy", "degeneration"]


def _passes(total: int = 2 * len(FAMILIES)) -> list[tuple[str, int, int]]:
    """The family passes of one analysis: each family per step, then each over the whole table, then the end."""
    return [(name, i, total) for i, name in enumerate(FAMILIES)] + \
        [("overall", i, total) for i in range(len(FAMILIES), total + 1)]


def test_analyze_tells_the_files_read_and_each_family_on_a_real_verl_folder(tmp_path: Path) -> None:
    from rlvitals.synthetic.demo import run_demo

    folder = run_demo(tmp_path, steps=7).rollouts  # a real learner's veRL rollout_data_dir: 1.jsonl … 7.jsonl
    seen: list[tuple[str, int, int | None]] = []
    told = rlvitals.analyze_rollouts(folder, progress=lambda *call: seen.append(call))
    assert seen == [("reading", i, 7) for i in range(8)] + _passes()
    assert told.steps.equals(rlvitals.analyze_rollouts(folder).steps)  # telling changes no value


def test_every_reader_tells_its_files(tmp_path: Path) -> None:
    from rlvitals.rollout.writers import write_trl_completions

    records = [{"step": 1, "prompt": "2+2?", "response": str(4 + i % 2), "score": float(i % 2 == 0)} for i in range(4)]
    for step in (1, 2, 3):
        write_trl_completions([{**r, "step": step} for r in records], tmp_path / "trl", step)
    table = tmp_path / "table.jsonl"
    table.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    for path, files in ((tmp_path / "trl", 3), (table, 1)):
        seen: list[tuple[str, int, int | None]] = []
        rlvitals.analyze_rollouts(path, progress=lambda *call, s=seen: s.append(call))
        assert seen[:files + 1] == [("reading", i, files) for i in range(files + 1)], path
        assert seen[files + 1:] == _passes()


def test_rollouts_in_memory_are_not_read_so_only_the_families_are_told() -> None:
    seen: list[tuple[str, int, int | None]] = []
    rlvitals.analyze_rollouts([{"prompt": "q", "response": "4", "score": 1.0}], progress=lambda *c: seen.append(c))
    assert seen == _passes()


def test_n_states_divides_the_distinct_states_by_the_size_of_the_space() -> None:
    from rlvitals.rollout.options import RolloutSettings
    from rlvitals.watch.rollouts import step_frame

    rows = [{"step": 1, "group": "a", "sample": s, "response": str(s), "score": float(s),
             "states": ["s0", f"s{s}", "s0"]} for s in range(2)]
    # 2 distinct states in 6 visits; with a space of 8 states, 2 of 8
    assert rlvitals.analyze_rollouts(rows, ks=(1,)).steps["diversity/state_coverage"].to_list() == [2 / 6]
    a = rlvitals.analyze_rollouts(rows, ks=(1,), n_states=8)
    assert a.steps["diversity/state_coverage"].to_list() == [0.25]
    table = a.rollouts.table if a.rollouts is not None else None
    assert table is not None
    settings = RolloutSettings(ks=(1,), n_states=8)
    assert step_frame(table, settings)["diversity/state_coverage"].to_list() == [0.25]  # what watch joins
    with pytest.raises(ValueError, match=r"n_states must be a whole number >= 1 \(the size of the environment's "
                                         r"state space\), got 0"):
        rlvitals.analyze_rollouts(rows, n_states=0)
    bare = [{k: v for k, v in r.items() if k != "states"} for r in rows]
    with pytest.raises(InputError, match=r"^--n-states 8 \(n_states\): .* but the rollouts have no 'states' column"):
        rlvitals.analyze_rollouts(bare, n_states=8)
    with pytest.raises(InputError, match=r"no 'states' column"):
        step_frame(table.drop("states"), settings)
