"""`rlvitals rollouts`: what the reader skipped is shown, in text and JSON, and in the error
when nothing could be read."""

from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl
import pytest

from rlvitals.cli import main


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def _verl_line(q: int, i: int, step: int = 3) -> str:
    ok = i % 2 == 0
    return json.dumps({"input": f"Question {q}: what is {q}+{q}?", "output": f"#### {2 * q if ok else -1}",
                       "gts": str(2 * q), "score": float(ok), "step": step, "acc": ok}, ensure_ascii=False)


def _damaged_verl_dump(folder: Path) -> Path:
    """A veRL dump with a non-JSON line (3), a score 'oops' (6) and a cut-off last line (11)."""
    folder.mkdir()
    lines = [_verl_line(q, i) for q in range(2) for i in range(4)]
    lines.insert(2, "not json at all")
    lines.insert(5, json.dumps({"input": "Question 0: what is 0+0?", "output": "x", "score": "oops", "step": 3}))
    path = folder / "3.jsonl"
    path.write_text("\n".join(lines) + "\n" + '{"input": "Question 1', encoding="utf-8")
    return path


def test_text_output_lists_the_skipped_lines(tmp_path: Path) -> None:
    path = _damaged_verl_dump(tmp_path / "dump")
    code, out, err = _cli("rollouts", str(tmp_path / "dump"))
    assert code == 0, err
    flat = " ".join(out.split())  # rich wraps long lines
    assert "skipped 3 line(s) or row(s) of the input:" in flat
    assert f"{path}:3: invalid JSON (Expecting value at column 1); the line was skipped" in flat
    assert f"{path}:6: score 'oops' is not a number; the row was skipped" in flat
    assert f"{path}:11: invalid JSON" in flat and "the file ends mid-line" in flat


def test_json_output_carries_the_skip_log(tmp_path: Path) -> None:
    path = _damaged_verl_dump(tmp_path / "dump")
    code, out, err = _cli("rollouts", "--json", str(tmp_path / "dump"))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["skipped"]["count"] == 3
    assert doc["skipped"]["reasons"][0] == f"{path}:3: invalid JSON (Expecting value at column 1); the line was skipped"
    assert doc["skipped"]["reasons"][2] == f"{path}:6: score 'oops' is not a number; the row was skipped"
    assert any(r.startswith("tokens:") for r in doc["not_computed"])
    assert doc["steps"][0]["rollouts"] == 8


def test_clean_input_reports_no_skips(tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "1.jsonl").write_text("".join(_verl_line(0, i, 1) + "\n" for i in range(4)))
    code, out, _ = _cli("rollouts", "--json", str(tmp_path / "dump"))
    assert code == 0 and json.loads(out)["skipped"] == {"count": 0, "reasons": []}
    assert "skipped" not in _cli("rollouts", str(tmp_path / "dump"))[1]


def test_more_skips_than_reasons_kept_says_how_many_more(tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    lines = [_verl_line(0, i, 1) for i in range(2)] + ["garbage"] * 25
    (tmp_path / "dump" / "1.jsonl").write_text("\n".join(lines) + "\n")
    code, out, _ = _cli("rollouts", str(tmp_path / "dump"))
    assert code == 0
    assert "skipped 25 line(s)" in out and "… and 5 more" in out
    doc = json.loads(_cli("rollouts", "--json", str(tmp_path / "dump"))[1])
    assert doc["skipped"]["count"] == 25 and len(doc["skipped"]["reasons"]) == 20


def test_damaged_completions_parquet_is_a_listed_skip(tmp_path: Path) -> None:
    comp = tmp_path / "completions"
    comp.mkdir()
    pl.DataFrame({"step": ["1"] * 2, "prompt": ["q", "q"], "completion": ["a", "b"],
                  "accuracy_reward": [1.0, 0.0], "advantage": [0.5, -0.5]},
                 ).write_parquet(comp / "completions_00001.parquet")
    bad = comp / "completions_00002.parquet"
    bad.write_bytes(b"PAR1 this is not a parquet file")
    code, out, err = _cli("rollouts", "--json", str(tmp_path))
    assert code == 0, err
    skipped = json.loads(out)["skipped"]
    assert skipped["count"] == 1
    assert skipped["reasons"][0].startswith(f"{bad}: cannot be read as Parquet (")
    assert skipped["reasons"][0].endswith("the file was skipped")


def test_all_bad_input_names_the_skipped_lines_in_the_error(tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "1.jsonl").write_text("nope\n[1, 2]\n")
    code, out, err = _cli("rollouts", str(tmp_path / "dump"))
    assert code == 2 and out == ""
    path = tmp_path / "dump" / "1.jsonl"
    assert err == (f"rlvitals: {tmp_path / 'dump'}: no rollout could be read: 2 line(s) or row(s) were skipped: "
                   f"{path}:1: invalid JSON (Expecting value at column 1); the line was skipped; "
                   f"{path}:2: expected a JSON object with input/output/score, got list; the line was skipped\n")


def _trl_output_dir(root: Path) -> Path:
    comp = root / "completions"
    comp.mkdir(parents=True)
    for step in (5, 10):
        pl.DataFrame({"step": [str(step)] * 4, "prompt": ["a", "a", "b", "b"], "completion": ["x", "y", "z", "w"],
                      "accuracy_reward": [1.0, 0.0, 0.0, 0.0], "format_reward": [1.0, 1.0, 0.0, 1.0],
                      "advantage": [0.0] * 4}).write_parquet(comp / f"completions_{step:05d}.parquet")
    return root


def test_correct_option_on_a_verl_dump_keeps_steps_and_groups(tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    for step in (1, 2):
        rows = [json.loads(_verl_line(q, i, step)) for q in range(2) for i in range(4)]
        (tmp_path / "dump" / f"{step}.jsonl").write_text(
            "".join(json.dumps(dict(r, strict=False)) + "\n" for r in rows))
    code, out, err = _cli("rollouts", "--json", "--k", "1", "--correct", "strict", str(tmp_path / "dump"))
    assert code == 0, err
    doc = json.loads(out)
    assert [(s["step"], s["groups"], s["rollouts"], s["pass@k"]["1"]) for s in doc["steps"]] == [(1, 2, 8, 0.0),
                                                                                                 (2, 2, 8, 0.0)]
    assert "column options override the verl-dump fields: correct = 'strict' (was 'acc')" in doc["notes"]


def test_correct_option_on_a_trl_output_dir_and_its_completions(tmp_path: Path) -> None:
    root = _trl_output_dir(tmp_path / "out")
    for where in (root, root / "completions"):
        code, out, err = _cli("rollouts", "--json", "--k", "1", "--correct", "accuracy_reward", str(where))
        assert code == 0, err
        steps = json.loads(out)["steps"]
        assert [(s["step"], s["groups"], s["pass@k"]["1"]) for s in steps] == [(5, 2, 0.25), (10, 2, 0.25)]


def test_json_shape_follows_the_paths_when_one_fails(tmp_path: Path) -> None:
    root = _trl_output_dir(tmp_path / "out")
    code, out, err = _cli("rollouts", "--json", str(tmp_path / "nowhere"))
    assert code == 2 and out == "" and "nowhere: no such file or folder" in err
    code, out, _ = _cli("rollouts", "--json", str(root), str(tmp_path / "nowhere"))
    assert code == 2 and [d["path"] for d in json.loads(out)["runs"]] == [str(root)]


def test_all_null_scores_are_not_computed_rather_than_wrong(tmp_path: Path) -> None:
    # a TRL run whose reward functions all returned None (NaN in the file), e.g. no gold answer parsed
    comp = tmp_path / "completions"
    comp.mkdir()
    nan = float("nan")
    pl.DataFrame({"step": ["1"] * 4, "prompt": ["a", "a", "b", "b"], "completion": ["x", "y", "z", "w"],
                  "accuracy_reward": [nan] * 4, "advantage": [0.0] * 4},
                 ).write_parquet(comp / "completions_00001.parquet")
    code, out, err = _cli("rollouts", "--json", "--k", "1,2", str(tmp_path))
    assert code == 0, err
    doc = json.loads(out)
    step = doc["steps"][0]
    assert (step["groups"], step["rollouts"]) == (2, 4)
    assert step["pass@k"] == {} and step["zero_variance"]["identical"] is None  # was 0.0 and 1.0
    assert doc["not_computed"][0] == ("group: none of the 4 rollouts has a score or a known correctness (all null), "
                                      "so σ_G, pass@k, maj@k and the zero-variance split are not computed; map the "
                                      "reward (--score COLUMN) or the correctness (--correct COLUMN)")
    text = _cli("rollouts", "--verbose", str(tmp_path))[1]
    assert "not computed (" in text and "group: none of the 4 rollouts" in " ".join(text.split())


def test_some_null_scores_are_left_out_and_counted(tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    rows = [json.loads(_verl_line(0, i, 1)) for i in range(4)]
    for r in rows[2:]:
        r["score"], r["acc"] = None, None
    (tmp_path / "dump" / "1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    doc = json.loads(_cli("rollouts", "--json", "--k", "1,2", str(tmp_path / "dump"))[1])
    assert doc["steps"][0]["pass@k"] == {"1": 0.5, "2": 1.0}  # the two scored rollouts: one right, one wrong
    assert "2 of 4 rollouts have neither a score nor a known correctness: the group family (σ_G, pass@k, maj@k, " \
           "group sizes) leaves them out" in doc["notes"]


def test_maj_map_is_empty_without_answers_and_overall_counts_are_integers(tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    # responses that state no answer ("0" rather than veRL's GSM8K form "#### 0"): nothing to vote on
    (tmp_path / "dump" / "1.jsonl").write_text("".join(_verl_line(q, i, 1).replace("#### ", "") + "\n"
                                                       for q in range(2) for i in range(4)))
    code, out, err = _cli("rollouts", "--json", "--k", "1,2,8", str(tmp_path / "dump"))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["steps"][0]["maj@k"] == {} and doc["overall"]["maj@k"] == {}
    assert doc["steps"][0]["pass@k"] == {"1": 0.5, "2": pytest.approx(5 / 6), "8": None}  # no group of 8: null
    overall = doc["overall"]
    assert overall["groups"] == 2 and isinstance(overall["groups"], int) and isinstance(overall["rollouts"], int)
    assert '"groups":2,' in out.replace(" ", "") and '"groups":2.0' not in out.replace(" ", "")
    assert isinstance(overall["metrics"]["group/size/min"], int)
    with_answers = tmp_path / "answers"
    with_answers.mkdir()
    (with_answers / "1.jsonl").write_text("".join(
        json.dumps(dict(json.loads(_verl_line(0, i, 1)), pred=str(i % 2))) + "\n" for i in range(4)))
    step = json.loads(_cli("rollouts", "--json", "--k", "1,8", str(with_answers))[1])["steps"][0]
    assert step["maj@k"] == {"1": 0.5, "8": None}
    # without pred, the answers veRL's GSM8K reward scored ("#### 0", "#### -1") are read from the responses
    stated = tmp_path / "stated"
    stated.mkdir()
    (stated / "1.jsonl").write_text("".join(_verl_line(0, i, 1) + "\n" for i in range(4)))
    doc = json.loads(_cli("rollouts", "--json", "--k", "1,2,8", str(stated))[1])
    assert doc["steps"][0]["maj@k"] == {"1": 0.5, "2": 0.5, "8": None}
    assert any("as veRL's default rewards read it" in n for n in doc["notes"])


def test_a_non_number_length_in_a_csv_is_noted(tmp_path: Path) -> None:
    path = tmp_path / "samples.csv"
    path.write_text("prompt,response,score,length\np,a,1,ten\np,b,0,12\np,c,0,3.5\n")
    code, out, err = _cli("rollouts", "--json", str(path))
    assert code == 0, err
    assert (f"2 value(s) of 'length' are not whole numbers (e.g. {path}:2: 'ten'); they were read as unknown "
            "(null)") in json.loads(out)["notes"]


def test_text_view_shows_the_rollout_scale_and_the_sources(tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    rows = [dict(json.loads(_verl_line(q, i, 1)), data_source=f"src{q}") for q in range(2) for i in range(4)]
    rows[0]["output"] = "<tool_call>add(0, 0)</tool_call> #### 0"
    (tmp_path / "dump" / "1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = _cli("rollouts", "--k", "1,2", "--id-source", "src0", "--tool-cap", "1", str(tmp_path / "dump"))
    assert code == 0, err
    lines = [line.rstrip() for line in out.splitlines()]
    # the responses' "#### N" (veRL's GSM8K form) are the answers voted on: maj@2 and its gap are shown too
    assert lines[lines.index("group scale") + 3] == ("  all       2         8  0.577         0      0      0          1"
                                                     "     0.5   0.833  0.333    0.5         0")
    at = lines.index("rollout scale")
    assert lines[at + 1].split() == ["step", "distinct-2", "dup", "edit", "length×✓", "tools", "at", "cap", "repeat",
                                     "valid"]
    # one call in 8 rollouts, at the cap of 1, not a repeat, its arguments (0, 0) not a JSON object
    assert lines[at + 2].split()[-4:] == ["0.125", "0.125", "0", "0"]
    at = lines.index("by data source")
    assert lines[at + 1:at + 4] == [" source  pass@1  score  id_gap", " src0       0.5    0.5       0",
                                    " src1       0.5    0.5       0"]


def test_a_column_option_naming_no_column_is_reported_as_the_option(tmp_path: Path) -> None:
    table = tmp_path / "samples.csv"
    table.write_text("prompt,response,score\np,a,1\np,b,0\n")
    code, out, err = _cli("rollouts", "--correct", "acc", str(table))
    assert (code, out) == (2, "")
    assert err == (f"rlvitals: --correct acc: no column 'acc' in {table}; its columns are ['prompt', 'response', "
                   "'score']; fix the column name\n")
    err = _cli("rollouts", "--correct", "acc", "--score", "reward", str(table))[2]
    assert err == (f"rlvitals: --score reward, --correct acc: no columns 'reward' and 'acc' in {table}; its columns "
                   "are ['prompt', 'response', 'score']; fix the column names\n")
    err = _cli("rollouts", "--correct", "r", "--score", "r", str(table))[2]
    assert err.startswith(f"rlvitals: --score r, --correct r: no column 'r' in {table}; ")


def test_a_column_option_over_a_verl_dump_or_trl_completions_names_the_option(tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / "1.jsonl").write_text("".join(_verl_line(0, i, 1) + "\n" for i in range(2)))
    err = _cli("rollouts", "--correct", "strict_acc", str(tmp_path / "dump"))[2]
    assert err == (f"rlvitals: --correct strict_acc: no column 'strict_acc' in {tmp_path / 'dump'}; its columns are "
                   "['input', 'output', 'gts', 'score', 'step', 'acc']; fix the column name\n")
    root = _trl_output_dir(tmp_path / "out")
    err = _cli("rollouts", "--score", "total", str(root))[2]
    assert err.startswith(f"rlvitals: --score total: no column 'total' in {root}; its columns are ['step', 'prompt', ")


def _visited(path: Path, states: bool = True) -> Path:
    """A generic table of 2 steps × 2 groups × 2 rollouts; a group's rollouts visit ['s<g>', 's<sample>']."""
    rows = [{"step": step, "group": f"p{g}", "sample": s, "response": f"went {g} {s}", "score": float(s),
             **({"states": [f"s{g}", f"s{s}"]} if states else {})}
            for step in (1, 2) for g in range(2) for s in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _coverage(out: str) -> list[float]:
    return [step["metrics"]["diversity/state_coverage"] for step in json.loads(out)["steps"]]


def test_n_states_makes_state_coverage_the_share_of_the_state_space(tmp_path: Path) -> None:
    table = _visited(tmp_path / "visits.jsonl")
    # group p0 visits s0, s0, s0, s1: 2 distinct states of 4 visits, or 2 of a space of 10 states
    code, out, err = _cli("rollouts", str(table), "--json")
    assert (code, _coverage(out)) == (0, [0.5, 0.5]), err
    code, out, err = _cli("rollouts", str(table), "--json", "--n-states", "10")
    assert (code, _coverage(out)) == (0, [0.2, 0.2]), err


def test_n_states_reaches_the_series_diagnose_and_report_judge(tmp_path: Path, real: Path) -> None:
    from rlvitals.cli._common import paired_runs, rollout_settings
    from rlvitals.cli._parser import build_parser

    table, log = _visited(tmp_path / "visits.jsonl"), str(real / "trl__UnslothGRPO__checkpoint-250_trainer_state.json")
    for command in (["diagnose", log], ["report", log, "-o", str(tmp_path / "r.html")]):
        args = build_parser().parse_args([*command, "--rollouts", str(table), "--n-states", "10"])
        paired = paired_runs([log], args.rollouts, None, io.StringIO(), rollout_settings(args, args.rollouts))
        assert paired is not None
        steps, values = paired[0][0].series("diversity/state_coverage")
        assert (steps.tolist(), values.tolist()) == ([1, 2], [0.2, 0.2])


def test_n_states_without_a_states_column_is_refused_in_both_languages(tmp_path: Path, real: Path) -> None:
    table = _visited(tmp_path / "visits.jsonl", states=False)
    code, out, err = _cli("rollouts", str(table), "--n-states", "10")
    assert (code, out) == (2, "")
    assert err == (f"rlvitals: --n-states 10 (n_states): diversity/state_coverage divides the distinct states a group "
                   f"visits by the size of the state space, but the rollouts in {table} have no 'states' column (the "
                   "states each rollout visited); name that column 'states' in the table or map it "
                   "(ColumnMap(states=...)), or drop --n-states\n")
    log = str(real / "trl__UnslothGRPO__checkpoint-250_trainer_state.json")
    code, out, err = _cli("diagnose", log, "--rollouts", str(table), "--n-states", "10", "--lang", "zh")
    assert (code, out) == (2, "")
    assert err == (f"rlvitals：--n-states 10（n_states）：diversity/state_coverage 是一组访问到的不同状态数除以状态空间"
                   f"的大小，但 {table} 里的 rollout 没有 'states' 列（每条 rollout 访问过的状态）；"
                   "请把表中这一列命名为 'states' 或映射它（ColumnMap(states=...)），或者去掉 --n-states\n")
    code, out, err = _cli("rollouts", str(table), "--n-states", "0")
    assert (code, out, err) == (2, "", "rlvitals: --n-states 0: the size of the state space is the number of states "
                                       "the environment has, a whole number >= 1\n")
