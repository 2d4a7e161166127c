"""Rollout readers: veRL generation dumps, TRL completions, generic tables and Python objects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from rlvitals.errors import EmptyInputError, InputError, UnknownFormatError
from rlvitals.rollout.readers import (
    ColumnMap,
    parse_reward_weights,
    read_rollouts,
    rollouts_from_frame,
    rollouts_from_records,
)
from rlvitals.rollout.schema import schema as rollout_schema

QUESTIONS = ["What is 2+3?", "Natalia sold 48 clips in April and half as many in May. How many in all?",
             "Compute 7*6."]
ANSWERS = ["5", "72", "42"]


def write_verl(path: Path, entries: list[dict[str, Any]]) -> None:
    """Exactly as RayPPOTrainer._dump_generations: one json.dumps(ensure_ascii=False) per line."""
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8")


def verl_step(step: int, n: int = 5, prompts: list[int] | None = None) -> list[dict[str, Any]]:
    """A training dump: n samples per prompt, consecutive (repeat(interleave=True))."""
    out = []
    for q in prompts if prompts is not None else range(len(QUESTIONS)):
        for i in range(n):
            ok = (i + step + q) % 2 == 0
            pred = ANSWERS[q] if ok else str(int(ANSWERS[q]) + 1)
            out.append({"input": f"<|im_start|>user\n{QUESTIONS[q]}<|im_end|>\n<|im_start|>assistant\n",
                        "output": f"Let me think step by step… #### {pred}", "gts": ANSWERS[q],
                        "score": 1.0 if ok else 0.0, "step": step, "acc": ok, "pred": pred,
                        "request_id": f"req-{step}-{q}-{i}", "data_source": "openai/gsm8k"})
    return out


@pytest.fixture
def verl_dir(tmp_path: Path) -> Path:
    d = tmp_path / "rollout_data"
    d.mkdir()
    for step in (1, 2, 10):
        write_verl(d / f"{step}.jsonl", verl_step(step))
    return d


# --- veRL ------------------------------------------------------------------------------------

def test_verl_folder_groups_consecutive_samples(verl_dir: Path) -> None:
    rs = read_rollouts(verl_dir, group_size=5)
    t = rs.table
    assert rs.format == "verl-dump"
    assert [Path(f).name for f in rs.files] == ["1.jsonl", "2.jsonl", "10.jsonl"]
    assert t.height == 45 and rs.skips.count == 0
    assert t["step"].unique().sort().to_list() == [1, 2, 10]
    first = t.filter(pl.col("step") == 2)
    assert first["group"].to_list() == ["0"] * 5 + ["1"] * 5 + ["2"] * 5
    assert first["sample"].to_list() == [0, 1, 2, 3, 4] * 3
    assert first["correct"].to_list()[:5] == [True, False, True, False, True]
    assert first["answer"].to_list()[1] == "6"
    assert set(t["source"].to_list()) == {"openai/gsm8k"}
    assert t["request_id"][0] == "req-1-0-0"
    assert not any("group_size" in n for n in rs.notes)
    for col, dtype in rollout_schema().items():
        if col in t.columns:
            assert t.schema[col] == dtype


def test_verl_step_from_file_name_when_field_absent(tmp_path: Path) -> None:
    entries = [{k: v for k, v in e.items() if k != "step"} for e in verl_step(7, n=2)]
    write_verl(tmp_path / "7.jsonl", entries)
    rs = read_rollouts(tmp_path / "7.jsonl")
    assert rs.table["step"].unique().to_list() == [7]
    assert rs.table["group"].to_list() == ["0", "0", "1", "1", "2", "2"]


def test_verl_group_size_mismatch_is_noted(tmp_path: Path) -> None:
    entries = verl_step(3, n=4)[:-1]  # last prompt has only 3 samples
    write_verl(tmp_path / "3.jsonl", entries)
    rs = read_rollouts(tmp_path, group_size=4)
    assert any("1 of 3 groups do not have group_size=4" in n and "step 3 group 2: 3" in n for n in rs.notes)


def test_verl_mixed_group_sizes_without_group_size(tmp_path: Path) -> None:
    write_verl(tmp_path / "1.jsonl", verl_step(1, n=2, prompts=[0]) + verl_step(1, n=1, prompts=[1]))
    rs = read_rollouts(tmp_path)
    assert rs.table["group"].to_list() == ["0", "0", "1"]
    assert rs.table["sample"].to_list() == [0, 1, 0]
    assert any("group sizes vary: 1, 2" in n for n in rs.notes)


def test_verl_single_sample_groups(tmp_path: Path) -> None:
    write_verl(tmp_path / "4.jsonl", verl_step(4, n=1))
    t = read_rollouts(tmp_path, group_size=1).table
    assert t["group"].to_list() == ["0", "1", "2"] and t["sample"].to_list() == [0, 0, 0]


def test_verl_validation_dump_interleaved_is_grouped_by_text(tmp_path: Path) -> None:
    # validation: prompts A B C A B C (samples of a prompt not consecutive), gts as lists
    entries = []
    for i in range(2):
        for q in range(3):
            entries.append({"input": QUESTIONS[q], "output": f"answer {i}", "gts": [ANSWERS[q], f"{ANSWERS[q]}.0"],
                            "score": float(i == 0), "step": 20})
    d = tmp_path / "val"
    d.mkdir()
    write_verl(d / "20.jsonl", entries)
    rs = read_rollouts(d, split="val", group_size=2)
    t = rs.table
    assert t["group"].to_list() == ["0", "1", "2", "0", "1", "2"]
    assert t["sample"].to_list() == [0, 0, 0, 1, 1, 1]
    assert json.loads(t["target"][0]) == ["5", "5.0"]
    assert set(t["split"].to_list()) == {"val"}
    assert any("grouped by prompt text" in n and "step(s) 20" in n for n in rs.notes)
    assert not any("group_size" in n for n in rs.notes)
    # no acc: correctness from the 0/1 score, and said so
    assert t["correct"].to_list() == [True, True, True, False, False, False]
    assert any("score >= 1.0" in n for n in rs.notes)


def test_verl_same_prompt_drawn_twice_stays_two_groups_with_group_size(tmp_path: Path) -> None:
    write_verl(tmp_path / "1.jsonl", verl_step(1, n=2, prompts=[0, 1, 0]))
    assert read_rollouts(tmp_path, group_size=2).table["group"].to_list() == ["0", "0", "1", "1", "2", "2"]
    # without group_size the repeat is read as an interleaved dump
    assert read_rollouts(tmp_path).table["group"].to_list() == ["0", "0", "1", "1", "0", "0"]


def test_verl_bad_lines_are_counted_skips(tmp_path: Path) -> None:
    good = verl_step(5, n=2, prompts=[0, 1])
    lines = [json.dumps(e, ensure_ascii=False) for e in good]
    lines.insert(1, '{"input": "x", "output": ')                          # line 2: invalid JSON
    lines.insert(3, '["not", "an", "object"]')                             # line 4
    bad_score = dict(good[0], score="n/a")
    lines.insert(5, json.dumps(bad_score))                                 # line 6
    path = tmp_path / "5.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b'{"input": "What is 2+3?", "out')  # cut last line
    rs = read_rollouts(path)
    assert rs.table.height == 4
    assert rs.skips.count == 4
    r = rs.skips.reasons
    assert r[0].startswith(f"{path}:2: invalid JSON")
    assert r[1] == f"{path}:4: expected a JSON object with input/output/score, got list; the line was skipped"
    assert r[2].startswith(f"{path}:8: invalid JSON") and "ends mid-line" in r[2]
    assert r[3] == f"{path}:6: score 'n/a' is not a number; the row was skipped"


def test_verl_non_utf8_bytes_keep_the_line(tmp_path: Path) -> None:
    e = verl_step(1, n=1, prompts=[0])[0]
    line = json.dumps(e, ensure_ascii=False).encode().replace(b"step by step", b"step \xff\xfe by step")
    (tmp_path / "1.jsonl").write_bytes(line + b"\n")
    rs = read_rollouts(tmp_path)
    assert rs.skips.count == 0
    assert "step \ufffd\ufffd by step" in rs.table["response"][0]
    assert any("U+FFFD" in n for n in rs.notes)


def test_verl_html_and_unicode_kept_verbatim(tmp_path: Path) -> None:
    text = '<script>alert("x")</script><b>答案</b> &amp; \\boxed{5}\n\t'
    e = dict(verl_step(1, n=1, prompts=[0])[0], output=text)
    write_verl(tmp_path / "1.jsonl", [e])
    assert read_rollouts(tmp_path).table["response"][0] == text


def test_verl_empty_step_file_and_missing_answers(tmp_path: Path) -> None:
    entries = verl_step(2, n=2, prompts=[0])
    for e in entries:
        del e["pred"]
    entries[1]["pred"] = None
    write_verl(tmp_path / "1.jsonl", [])
    write_verl(tmp_path / "2.jsonl", entries)
    rs = read_rollouts(tmp_path)
    assert rs.table["step"].to_list() == [2, 2]
    assert any("1.jsonl holds no samples" in n for n in rs.notes)
    assert rs.table["answer"].to_list() == [None, None]


def test_verl_non_binary_rewards_leave_correctness_unknown(tmp_path: Path) -> None:
    entries = verl_step(1, n=3, prompts=[0])
    for e, s in zip(entries, [2.5, 0.3, -0.7], strict=True):
        e["score"] = s
        del e["acc"]
    write_verl(tmp_path / "1.jsonl", entries)
    rs = read_rollouts(tmp_path)
    assert rs.table["score"].to_list() == [2.5, 0.3, -0.7]
    assert "correct" not in rs.table.columns
    assert any("not a 0/1 reward, so no correctness column was made" in n and "score >= 1.0" in n for n in rs.notes)


def test_verl_acc_as_number(tmp_path: Path) -> None:
    entries = verl_step(1, n=2, prompts=[0])
    entries[0]["acc"], entries[1]["acc"] = 1.0, 0
    entries[0]["score"] = 0.0  # acc wins over score
    write_verl(tmp_path / "1.jsonl", entries)
    assert read_rollouts(tmp_path).table["correct"].to_list() == [True, False]


def test_all_lines_bad_is_empty(tmp_path: Path) -> None:
    (tmp_path / "3.jsonl").write_text("not json\n")
    with pytest.raises(EmptyInputError, match=r"no rollout could be read"):
        read_rollouts(tmp_path)


# --- TRL -------------------------------------------------------------------------------------

def trl_frame(step: int, G: int = 4) -> pl.DataFrame:
    system = {"role": "system", "content": "Answer with a number."}
    rows: dict[str, list[Any]] = {"step": [], "prompt": [], "completion": [], "accuracy_reward": [],
                                  "format_reward": [], "advantage": []}
    for q in range(2):
        for i in range(G):
            rows["step"].append(str(step))
            rows["prompt"].append([system, {"role": "user", "content": QUESTIONS[q]}])
            rows["completion"].append(f"<think>…</think> {ANSWERS[q] if i < 2 else '0'}")
            rows["accuracy_reward"].append(1.0 if i < 2 else 0.0)
            rows["format_reward"].append(0.5 if i != 3 else float("nan"))
            rows["advantage"].append(0.8 if i < 2 else -0.8)
    return pl.DataFrame(rows)


def test_trl_output_dir_with_completions_folder(tmp_path: Path) -> None:
    comp = tmp_path / "completions"
    comp.mkdir()
    for step in (5, 10):
        trl_frame(step).write_parquet(comp / f"completions_{step:05d}.parquet")
    rs = read_rollouts(tmp_path, group_size=4)
    t = rs.table
    assert rs.format == "trl-completions" and t.height == 16
    assert t["step"].unique().sort().to_list() == [5, 10]
    assert t.filter(pl.col("step") == 10)["group"].to_list() == ["0"] * 4 + ["1"] * 4
    assert t["sample"].to_list()[:4] == [0, 1, 2, 3]
    assert t["prompt"][0] == QUESTIONS[0]
    assert json.loads(t["prompt_messages"][0])[0]["role"] == "system"
    assert t["score"].to_list()[:4] == [1.5, 1.5, 0.5, 0.0]  # NaN reward ignored as TRL's nansum
    assert t["accuracy_reward"].to_list()[:4] == [1.0, 1.0, 0.0, 0.0]
    assert t["advantage"][0] == pytest.approx(0.8)
    assert any("plain sum" in n and "reward_weights" in n for n in rs.notes)
    # correctness comes from the accuracy reward, not from the summed score (1.5 / 0.5)
    assert t["correct"].to_list()[:4] == [True, True, False, False]
    assert any(n.startswith("correctness from the accuracy-type reward column 'accuracy_reward'") for n in rs.notes)


def test_trl_single_file_with_reward_column_and_eval_overwrite(tmp_path: Path) -> None:
    trl_frame(1).with_columns(reward=pl.col("accuracy_reward")).write_parquet(tmp_path / "completions_00001.parquet")
    trl_frame(2, G=2).write_parquet(tmp_path / "completions_00002.parquet")
    trl_frame(3).write_parquet(tmp_path / "completions_00003.parquet")
    one = read_rollouts(tmp_path / "completions_00001.parquet")
    assert one.table["correct"].to_list()[:4] == [True, True, False, False]
    assert not any("plain sum" in n for n in one.notes)
    rs = read_rollouts(tmp_path)
    assert any("row count other than 8" in n and "completions_00002" in n for n in rs.notes)


def test_trl_string_prompts(tmp_path: Path) -> None:
    path = tmp_path / "completions_00003.parquet"
    pl.DataFrame({"step": ["3"] * 3, "prompt": ["a", "b", "a"], "completion": ["x", "y", "z"],
                  "len_reward": [0.1, 0.2, 0.3], "advantage": [0.0, 0.0, 0.0]}).write_parquet(path)
    t = read_rollouts(path).table
    assert t["group"].to_list() == ["0", "1", "0"] and t["sample"].to_list() == [0, 0, 1]
    assert t["score"].to_list() == [0.1, 0.2, 0.3]


# --- generic ---------------------------------------------------------------------------------

def test_generic_csv_with_column_map(tmp_path: Path) -> None:
    path = tmp_path / "rollouts.csv"
    path.write_text("iter,question,reply,reward,is_correct,final\n"
                    "0,q1,\"a, b\",1,true,5\n0,q1,c,0,false,6\n0,q2,d,oops,1,\n1,q1,e,0.5,0,7\n")
    cmap = ColumnMap(step="iter", prompt="question", response="reply", score="reward", correct="is_correct",
                     answer="final")
    rs = read_rollouts(path, columns=cmap)
    t = rs.table
    assert rs.format == "csv"
    assert t["step"].to_list() == [0, 0, 1] and t["group"].to_list() == ["0", "0", "0"]
    assert t["correct"].to_list() == [True, False, False]
    assert t["answer"].to_list() == ["5", "6", "7"] and t["response"][0] == "a, b"
    assert rs.skips.reasons == [f"{path}:4: score 'oops' is not a number; the row was skipped"]


def test_generic_jsonl_with_group_column_and_no_step(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    recs = [{"uid": "u1", "q": "p", "a": "x", "r": 1}, {"uid": "u2", "q": "p", "a": "y", "r": 0},
            {"uid": "u1", "q": "p", "a": "z", "r": 0}]
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n42\n")
    rs = read_rollouts(path, columns=ColumnMap(group="uid", prompt="q", response="a", score="r"))
    t = rs.table
    assert t["group"].to_list() == ["u1", "u2", "u1"] and t["sample"].to_list() == [0, 0, 1]
    assert t["step"].to_list() == [0, 0, 0]
    assert any("no step column" in n for n in rs.notes)
    assert rs.skips.reasons == [f"{path}:4: expected a JSON object, got int; the line was skipped"]


def test_generic_parquet_with_table_names(tmp_path: Path) -> None:
    path = tmp_path / "mine.parquet"
    df = pl.DataFrame({"step": [1, 1], "prompt": ["p", "p"], "response": ["a", "b"], "score": [0.0, 1.0]})
    df.write_parquet(path)
    rs = read_rollouts(path)
    assert rs.format == "parquet" and rs.table["correct"].to_list() == [False, True]


def test_column_map_naming_a_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"q": "p", "a": "x"}\n')
    with pytest.raises(InputError, match=r"\['reward'\] named in the column map are not in the data.*'q', 'a'"):
        read_rollouts(path, columns=ColumnMap(prompt="q", response="a", score="reward"))


def test_column_map_is_validated() -> None:
    with pytest.raises(InputError, match=r"score=3 is not a column name"):
        ColumnMap(score=3)  # type: ignore[arg-type]


# --- Python objects --------------------------------------------------------------------------

def test_records_and_frames() -> None:
    recs: list[Any] = [{"prompt": "p", "response": "a", "score": 1.0, "truncated": 1},
                       "junk", {"prompt": "p", "response": "b", "score": 0.0, "truncated": 0}]
    rs = rollouts_from_records(recs, group_size=2)
    assert rs.table["truncated"].to_list() == [True, False]
    assert rs.skips.reasons == ["record 1: expected a dict, got str; the record was skipped"]
    np = pytest.importorskip("numpy")
    arrays = {"p": np.array(["x", "y", "x"]), "s": np.array([1.0, 0.0, 0.0])}
    t = rollouts_from_frame(arrays, columns=ColumnMap(prompt="p", score="s")).table
    assert t["group"].to_list() == ["0", "1", "0"] and t["correct"].to_list() == [True, False, False]
    rs = rollouts_from_frame(pl.DataFrame({"prompt": ["x", "x"], "score": ["bad", "0.5"]}))
    assert rs.skips.reasons == ["row 0: score 'bad' is not a number; the row was skipped"]
    assert rs.table["score"].to_list() == [0.5]


def test_pandas_frame() -> None:
    pd = pytest.importorskip("pandas")
    t = rollouts_from_frame(pd.DataFrame({"prompt": ["x", "x"], "response": ["a", "b"]})).table
    assert t["sample"].to_list() == [0, 1]


def test_frame_of_wrong_type() -> None:
    with pytest.raises(InputError, match=r"got list; expected a polars or pandas DataFrame"):
        rollouts_from_frame([1, 2])


# --- detection -------------------------------------------------------------------------------

def test_unknown_and_empty_inputs(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EmptyInputError, match=r"empty.*folder is empty"):
        read_rollouts(empty)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("hello")
    with pytest.raises(UnknownFormatError, match=r"other: no rollout files found: the folder holds notes.txt; "
                       r"expected veRL <step>.jsonl files, TRL completions_<step>.parquet \(here or in completions/\), "
                       r"or JSONL/Parquet/CSV files with a column map \(--score/--group …\)$"):
        read_rollouts(other)
    with pytest.raises(UnknownFormatError, match=r"notes.txt: not a rollout file"):
        read_rollouts(other / "notes.txt")
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text('{"step": 1, "data": {"actor/loss": 0.1}}\n')
    with pytest.raises(UnknownFormatError, match=r"metrics.jsonl: columns \['step', 'data'\] name no rollout"):
        read_rollouts(metrics)
    with pytest.raises(InputError, match=r"nowhere: no such file"):
        read_rollouts(tmp_path / "nowhere")
    with pytest.raises(InputError, match=r"group_size=0 must be a positive"):
        read_rollouts(tmp_path, group_size=0)


def test_verl_named_file_without_dump_keys(tmp_path: Path) -> None:
    (tmp_path / "3.jsonl").write_text('{"step": 3, "data": {"actor/loss": 0.1}}\n')
    with pytest.raises(UnknownFormatError, match=r"named like a veRL generation dump.*no 'input'/'output'"):
        read_rollouts(tmp_path)


def test_verl_content_detected_under_any_name(tmp_path: Path) -> None:
    path = tmp_path / "gen.jsonl"
    write_verl(path, verl_step(6, n=2, prompts=[0]))
    rs = read_rollouts(path)
    assert rs.format == "verl-dump" and rs.table["step"].to_list() == [6, 6]


def test_correct_from_score_with_partial_credit(tmp_path: Path) -> None:
    # gsm8k-style format credit (0.1), partial credit (0.8) and a -1 penalty: only 1.0 counts as correct
    entries = verl_step(1, n=5, prompts=[0])
    for e, s in zip(entries, [1.0, 0.8, 0.1, 0.0, -1.0], strict=True):
        e["score"] = s
        del e["acc"]
    write_verl(tmp_path / "1.jsonl", entries)
    assert read_rollouts(tmp_path).table["correct"].to_list() == [True, False, False, False, False]


def test_trl_conversational_completions(tmp_path: Path) -> None:
    path = tmp_path / "completions_00002.parquet"
    pl.DataFrame({
        "step": ["2", "2"],
        "prompt": [[{"role": "user", "content": "Hi?"}]] * 2,
        "completion": [[{"role": "assistant", "content": "<b>4</b>"}], [{"role": "assistant", "content": "5"}]],
        "accuracy_reward": [1.0, 0.0],
        "advantage": [0.7, -0.7],
    }).write_parquet(path)
    rs = read_rollouts(path)
    assert rs.table["response"].to_list() == ["<b>4</b>", "5"]
    assert rs.table["group"].to_list() == ["0", "0"] and rs.table["correct"].to_list() == [True, False]
    assert any("responses are chat message lists" in n for n in rs.notes)


# --- TRL reward weights ------------------------------------------------------------------------

def _trl_by_pyarrow(path: Path) -> None:
    """A completions file written by pyarrow, as TRL's pandas ``to_parquet`` does."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"step": ["7"] * 4, "prompt": ["q"] * 4, "completion": ["a", "b", "c", "d"],
                             "accuracy_reward": [1.0, 0.0, 1.0, float("nan")],
                             "format_reward": [1.0, 1.0, float("nan"), float("nan")],
                             "advantage": [0.5, -0.5, 0.5, -0.5]}), path)


def test_trl_reward_weights_by_name_and_by_position(tmp_path: Path) -> None:
    comp = tmp_path / "completions"
    comp.mkdir()
    for step in (5, 10):
        trl_frame(step).write_parquet(comp / f"completions_{step:05d}.parquet")
    rs = read_rollouts(tmp_path, reward_weights={"format_reward": 0.2, "accuracy_reward": 2.0})
    # TRL: (rewards_per_func * weights).nansum(dim=1); sample 3 has a NaN format reward
    assert rs.table["score"].to_list()[:4] == [2.0 + 0.2 * 0.5, 2.0 + 0.2 * 0.5, 0.2 * 0.5, 0.0]
    assert any("weighted sum" in n and "'format_reward': 0.2" in n for n in rs.notes)
    assert not any("plain sum" in n for n in rs.notes)
    listed = read_rollouts(tmp_path, reward_weights=[2.0, 0.2])
    assert listed.table["score"].to_list() == rs.table["score"].to_list()
    path = tmp_path / "completions_00007.parquet"
    _trl_by_pyarrow(path)
    t = read_rollouts(path, reward_weights=[0.5, 3.0]).table
    assert t["score"].to_list() == [3.5, 3.0, 0.5, None]  # every reward NaN: no score


def test_trl_reward_weights_that_do_not_fit_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "completions_00007.parquet"
    _trl_by_pyarrow(path)
    with pytest.raises(InputError, match=r"completions_00007\.parquet: reward_weights names \['accuracy'\] that "
                       r"are not reward-function columns; the file's columns are \['step', 'prompt', .*'advantage'\] "
                       r"and its reward functions \['accuracy_reward', 'format_reward'\]; give one weight per"):
        read_rollouts(path, reward_weights={"accuracy": 1.0, "format_reward": 1.0})
    with pytest.raises(InputError, match=r"completions_00007\.parquet: reward_weights lacks \['format_reward'\]"):
        read_rollouts(path, reward_weights={"accuracy_reward": 1.0})
    with pytest.raises(InputError, match=r"reward_weights has 3 weight\(s\) but the file has 2 reward-function "
                       r"column\(s\) \['accuracy_reward', 'format_reward'\].*or a list of 2 numbers in that order"):
        read_rollouts(path, reward_weights=[1.0, 1.0, 1.0])
    with pytest.raises(InputError, match=r"reward_weights \[nan\] are not finite numbers"):
        read_rollouts(path, reward_weights=[1.0, float("nan")])


def test_reward_weights_only_for_trl(tmp_path: Path) -> None:
    f = tmp_path / "samples.jsonl"
    f.write_text('{"prompt": "q", "response": "a", "score": 1.0}\n')
    with pytest.raises(InputError, match=r"samples\.jsonl: reward_weights apply to TRL completions .* read as 'jsonl'"):
        read_rollouts(f, reward_weights=[1.0])
    path = tmp_path / "completions_00001.parquet"
    trl_frame(1).with_columns(reward=pl.col("accuracy_reward")).write_parquet(path)
    rs = read_rollouts(path, reward_weights=[1.0, 0.5])
    assert rs.table["score"].to_list()[:4] == [1.0, 1.0, 0.0, 0.0]
    assert any("'reward' column" in n for n in rs.notes)


def test_reward_weights_from_the_command_line_form() -> None:
    assert parse_reward_weights("accuracy_reward=2, format_reward=0.2") == {"accuracy_reward": 2.0,
                                                                           "format_reward": 0.2}
    assert parse_reward_weights("2,0.2") == [2.0, 0.2]
    for bad in ("a=1,0.5", "a=x", "", "=1"):
        with pytest.raises(InputError, match=r"--reward-weights .*: expected name=weight pairs like "
                           r"accuracy_reward=1,format_reward=0\.5 or weights in reward-column order like 1,0\.5"):
            parse_reward_weights(bad)


# --- list columns given as text or mixed ------------------------------------------------------

def test_csv_list_columns_are_parsed_from_json_and_python_text(tmp_path: Path) -> None:
    # a CSV cannot hold a list: hand-written files carry JSON text, pandas' to_csv writes Python reprs
    pd = pytest.importorskip("pandas")
    path = tmp_path / "agent.csv"
    pd.DataFrame({"prompt": ["find x", "find x"], "response": ["<tool_call>a</tool_call>", "done"],
                  "score": [1.0, 0.0], "tool_calls": [["search('x')", "open(3)"], []],
                  "token_entropy": [[0.5, 1.25], [0.0]]}).to_csv(path, index=False)
    assert '"[""search(\'x\')"", \'open(3)\']"' in path.read_text()  # the Python repr, CSV-quoted
    rs = read_rollouts(path)
    assert rs.table["tool_calls"].to_list() == [["search('x')", "open(3)"], []]
    assert rs.table["token_entropy"].to_list() == [[0.5, 1.25], [0.0]]
    json_csv = tmp_path / "hand.csv"
    json_csv.write_text('prompt,response,score,tool_calls,states\np,a,1,"[""search(x)""]","[0, 1]"\np,b,0,[],\n')
    t = read_rollouts(json_csv).table
    assert t["tool_calls"].to_list() == [["search(x)"], []]
    assert t["states"].to_list() == [["0", "1"], None] and t.schema["states"] == rollout_schema()["states"]


def test_jsonl_list_given_as_text_or_as_call_objects(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    calls = [{"name": "search", "arguments": {"q": "x"}}, {"name": "search", "arguments": {"q": "x"}}]
    recs = [{"prompt": "p", "response": "a", "score": 1, "tool_calls": "[]"},
            {"prompt": "p", "response": "b", "score": 0, "tool_calls": calls},
            {"prompt": "p", "response": "c", "score": 0, "tool_calls": ["open(3)"]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    rs = read_rollouts(path)
    assert rs.skips.count == 0
    call = '{"name": "search", "arguments": {"q": "x"}}'
    assert rs.table["tool_calls"].to_list() == [[], [call, call], ["open(3)"]]


def test_list_cell_that_is_no_list_is_a_counted_skip(tmp_path: Path) -> None:
    path = tmp_path / "env.jsonl"
    recs = [{"prompt": "p", "response": "a", "score": 1, "states": "s0", "token_entropy": [0.1]},
            {"prompt": "p", "response": "b", "score": 0, "states": ["s0", "s1"], "token_entropy": [0.1, "x"]},
            {"prompt": "p", "response": "c", "score": 0, "states": ["s0", None], "token_entropy": [0.3, None]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    rs = read_rollouts(path)
    assert rs.skips.reasons == [f"{path}:1: states 's0' is not a list of strings; the row was skipped",
                                f"{path}:2: token_entropy '[0.1, \"x\"]' is not a list of numbers; the row was skipped"]
    assert rs.table["response"].to_list() == ["c"]
    assert rs.table["states"].to_list() == [["s0", None]] and rs.table["token_entropy"].to_list() == [[0.3, None]]


def test_list_column_with_no_list_at_all_is_an_error_naming_the_column(tmp_path: Path) -> None:
    path = tmp_path / "counts.csv"
    path.write_text("question,reply,reward,calls\nq,a,1,3\nq,b,0,2\n")
    cmap = ColumnMap(prompt="question", response="reply", score="reward", tool_calls="calls")
    with pytest.raises(InputError, match=r"counts\.csv: column 'calls' \(the tool_calls column\) holds no list of "
                       r"strings; e\.g\. .*counts\.csv:2: '3'; expected a list, or JSON text like "
                       r"\[\"search\(x\)\", \"open\(3\)\"\]; fix the column or leave it unmapped"):
        read_rollouts(path, columns=cmap)
    frame = pl.DataFrame({"prompt": ["q"], "score": [1.0], "token_logprob": ["-0.5 -0.1"]})
    with pytest.raises(InputError, match=r"frame: column 'token_logprob' \(the token_logprob column\) holds no list "
                       r"of numbers; e\.g\. row 0: '-0\.5 -0\.1'; expected a list, or JSON text like \[0\.12, 1\.5"):
        rollouts_from_frame(frame)


# --- column maps over the veRL and TRL readers -------------------------------------------------

def test_column_map_overrides_one_verl_field(verl_dir: Path) -> None:
    for path in sorted(verl_dir.iterdir()):
        entries = [json.loads(line) for line in path.read_text().splitlines()]
        write_verl(path, [dict(e, strict_acc=False, acc=e["acc"]) for e in entries])
    rs = read_rollouts(verl_dir, columns=ColumnMap(correct="strict_acc"), group_size=5)
    t = rs.table
    assert rs.format == "verl-dump" and t["step"].unique().sort().to_list() == [1, 2, 10]
    assert t.filter(pl.col("step") == 2)["group"].to_list() == ["0"] * 5 + ["1"] * 5 + ["2"] * 5
    assert t["correct"].to_list() == [False] * 45  # the other fields stay veRL's
    assert t.filter(pl.col("step") == 2)["answer"][1] == "6" and t["acc"].to_list()[:2] == [False, True]
    assert "column options override the verl-dump fields: correct = 'strict_acc' (was 'acc')" in rs.notes
    one = read_rollouts(verl_dir / "2.jsonl", columns=ColumnMap(correct="strict_acc"))
    assert one.format == "verl-dump" and one.table["step"].unique().to_list() == [2]
    with pytest.raises(InputError, match=r"\['nosuch'\] named in the column map are not in the data; its columns are "
                       r"\['input', 'output', 'gts', 'score', 'step', 'acc', 'pred', 'request_id', 'data_source', "
                       r"'strict_acc'\]"):
        read_rollouts(verl_dir, columns=ColumnMap(correct="nosuch"))


def test_column_map_overrides_trl_fields(tmp_path: Path) -> None:
    comp = tmp_path / "completions"
    comp.mkdir()
    for step in (5, 10):
        trl_frame(step).with_columns(tokens=pl.lit(12)).write_parquet(comp / f"completions_{step:05d}.parquet")
    for where in (tmp_path, comp):
        rs = read_rollouts(where, columns=ColumnMap(correct="accuracy_reward", length="tokens"))
        t = rs.table
        assert rs.format == "trl-completions" and t["step"].unique().sort().to_list() == [5, 10]
        assert t.filter(pl.col("step") == 5)["group"].to_list() == ["0"] * 4 + ["1"] * 4
        assert t["correct"].to_list()[:4] == [True, True, False, False]
        assert t["length"].to_list()[:2] == [12, 12]
        # 'tokens' is a length now, not a reward function: the score stays accuracy + format
        assert t["score"].to_list()[:4] == [1.5, 1.5, 0.5, 0.0]
    scored = read_rollouts(comp, columns=ColumnMap(score="accuracy_reward")).table
    assert scored["score"].to_list()[:4] == [1.0, 1.0, 0.0, 0.0]
    with pytest.raises(InputError, match=r"the score column is given \('accuracy_reward'\), so reward_weights have "
                       r"no reward functions to weigh; give the score column or reward_weights, not both"):
        read_rollouts(comp, columns=ColumnMap(score="accuracy_reward"), reward_weights=[1.0, 1.0])


def test_folder_messages_name_what_was_found(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "completions").mkdir(parents=True)
    (out / "completions" / "events.log").write_text("x")
    with pytest.raises(UnknownFormatError, match=r"out: no rollout files found: the folder holds completions/; its "
                       r"completions/ folder holds events.log; expected veRL <step>.jsonl files, TRL "
                       r"completions_<step>.parquet \(here or in completions/\), or JSONL/Parquet/CSV files \(read "
                       r"with the column options\)$"):
        read_rollouts(out, columns=ColumnMap(correct="accuracy_reward"))
    (out / "completions" / "events.log").unlink()
    with pytest.raises(UnknownFormatError, match=r"the folder holds completions/; its completions/ folder holds "
                       r"nothing; expected"):
        read_rollouts(out)


def test_generic_folder_with_a_column_map_still_reads(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("q,r\nx,1\nx,0\n")
    rs = read_rollouts(tmp_path, columns=ColumnMap(prompt="q", score="r"))
    assert rs.format == "csv" and rs.table["group"].to_list() == ["0", "0"]


# --- correctness of TRL completions with several reward functions ------------------------------

def _trl_rewards(path: Path, rewards: dict[str, list[float]]) -> None:
    """A completions file of one step, 2 prompts x 4 samples, with the given reward columns."""
    n = len(next(iter(rewards.values())))
    pl.DataFrame({"step": ["3"] * n, "prompt": [QUESTIONS[i * 2 // n] for i in range(n)],
                  "completion": [f"<think>…</think><answer>{i}</answer>" for i in range(n)], **rewards,
                  "advantage": [0.0] * n}).write_parquet(path)


def test_trl_accuracy_zero_with_format_credit_is_not_correct(tmp_path: Path) -> None:
    # TRL's accuracy_reward 0 everywhere, a format reward of 1.0 on half: the summed score reaches 1.0
    path = tmp_path / "completions_00003.parquet"
    _trl_rewards(path, {"accuracy_reward": [0.0] * 8, "format_reward": [1.0, 0.0] * 4})
    import rlvitals

    a = rlvitals.analyze_rollouts(path, ks=(1, 2))
    assert a.rollouts is not None and a.rollouts.table["correct"].to_list() == [False] * 8
    assert a.steps["pass@1"].to_list() == [0.0] and a.steps["pass@2"].to_list() == [0.0]
    assert a.steps["group/zero_std/all_wrong"].to_list() == [0.0]  # the summed scores vary: 1, 0, 1, 0
    assert a.steps["group/reward_std/mean"][0] > 0


def test_trl_correctness_column_rule(tmp_path: Path) -> None:
    path = tmp_path / "completions_00003.parquet"
    _trl_rewards(path, {"correctness_reward_func": [2.0, 0.0, 0.0, 0.0, 2.0, 2.0, 0.0, float("nan")],
                        "xmlcount_reward_func": [0.5] * 8, "strict_format_reward_func": [0.5, 0.0] * 4})
    rs = read_rollouts(path)
    assert rs.table["correct"].to_list() == [True, False, False, False, True, True, False, None]
    overridden = read_rollouts(path, columns=ColumnMap(correct="strict_format_reward_func"))
    # the column given is read as true/false or 0/1; 0.5 is neither: unknown, and not re-guessed from the sum
    assert overridden.table["correct"].to_list() == [None, False] * 4
    assert any("4 value(s) of 'correct' are neither true/false nor 0/1" in n for n in overridden.notes)
    assert not any("correctness from the accuracy-type" in n for n in overridden.notes)


def test_trl_several_rewards_without_an_accuracy_one_leave_correctness_unknown(tmp_path: Path) -> None:
    path = tmp_path / "completions_00003.parquet"
    _trl_rewards(path, {"length_reward": [0.2, 0.9, 1.0, 0.4, 0.3, 0.3, 0.3, 0.3],
                        "format_reward": [1.0, 0.0] * 4})
    import rlvitals

    a = rlvitals.analyze_rollouts(path, ks=(1, 2))
    assert any(n.startswith("several reward functions ['length_reward', 'format_reward'] and none is accuracy-type")
               and n.endswith("are not computed; give --correct COLUMN") for n in a.notes)
    assert a.rollouts is not None and a.rollouts.table["correct"].null_count() == 8
    row = a.steps.row(0, named=True)
    for key in ("pass@1", "pass@2", "group/zero_std/all_correct", "group/zero_std/all_wrong"):
        assert row[key] != row[key], key  # NaN: not computed, where 0.5 was reported before
    assert row["group/reward_std/mean"] > 0 and row["group/zero_std/share"] == 0.0
    two = tmp_path / "two"
    two.mkdir()
    _trl_rewards(two / "completions_00001.parquet", {"acc_reward": [1.0, 0.0] * 4, "accuracy_v2": [1.0] * 8})
    assert any(n.startswith("several accuracy-type reward columns ['acc_reward', 'accuracy_v2']")
               for n in read_rollouts(two).notes)


def test_verl_acc_missing_on_some_lines_is_filled_from_a_binary_score(tmp_path: Path) -> None:
    # a reward function that reports acc only for some data sources
    entries = verl_step(1, n=4, prompts=[0])
    for e in entries[2:]:
        del e["acc"]
    write_verl(tmp_path / "1.jsonl", entries)
    rs = read_rollouts(tmp_path)
    assert rs.table["correct"].to_list() == [False, True, False, True]
    assert "2 rollout(s) have a score but no correctness value: theirs is taken from the score (correct = " \
           "score >= 1.0, as scores lie in [-1, 1])" in rs.notes
    for e, s in zip(entries, [3.0, 0.5, 2.0, 0.0], strict=True):
        e["score"] = s
    write_verl(tmp_path / "1.jsonl", entries)
    rs = read_rollouts(tmp_path)
    assert rs.table["correct"].to_list() == [False, True, None, None]
    assert any(n.startswith("2 rollout(s) have no correctness value and scores range over [0, 3], not a 0/1 "
                            "reward: their correctness is unknown") for n in rs.notes)


def test_a_column_map_naming_one_field_still_reads_the_table_s_own_columns(tmp_path: Path) -> None:
    """`--score reward` on a table with its own step and prompt columns: those were silently ignored
    (everything at step 0, each rollout its own group) because a given map replaced the table's names."""
    rows = [{"step": step, "prompt": f"q{g}", "response": f"a{s}", "reward": float((g + s) % 2)}
            for step in (1, 2) for g in range(2) for s in range(3)]
    path = tmp_path / "rollouts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    rs = read_rollouts(path, columns=ColumnMap(score="reward"))
    assert sorted(set(rs.table["step"].to_list())) == [1, 2]
    sizes = rs.table.group_by(["step", "group"]).len()["len"].to_list()
    assert sorted(sizes) == [3, 3, 3, 3]  # two prompts of three rollouts per step


def test_a_64_bit_uid_a_lone_surrogate_and_a_5000_digit_number_do_not_crash_a_dump(tmp_path: Path) -> None:
    """A uid hashed to 64 unsigned bits overflowed the Int64 column; a JSON \\ud800 escape in a response
    could not be stored as text; a 5,000-digit integer is past Python's int parsing limit. All three crashed."""
    big = 2**64 + 5
    folder = tmp_path / "dump"
    folder.mkdir()
    lines = [{"input": "q1", "output": "a", "score": 1.0, "uid": big}, {"input": "q1", "output": "b", "score": 0.0,
             "uid": big}, {"input": "q2", "output": "c\ud800", "score": 1.0, "uid": 3}]
    text = "".join(json.dumps(r) + "\n" for r in lines)
    text += '{"input": "q2", "output": "d", "score": 0.0, "uid": 1' + "9" * 5000 + "}\n"
    (folder / "1.jsonl").write_text(text, encoding="utf-8")
    rs = read_rollouts(folder)
    assert rs.table.height == 3 and rs.skips.count == 1
    assert rs.skips.reasons[0].startswith(f"{folder / '1.jsonl'}:4: invalid JSON (Exceeds the limit (4300 digits)")
    assert "c\ufffd" in rs.table["response"].to_list()
    assert rs.table.group_by("group").len()["len"].sort().to_list() == [1, 2]  # the two big-uid rows stay one group


@pytest.mark.process
def test_a_fifo_given_or_among_the_dumps_is_never_opened(tmp_path: Path) -> None:
    """A FIFO given as the dump, or named ``1.jsonl`` before the real dumps (what ``serve`` and ``--rollouts``
    look for in a folder), waited for a writer forever: the one given is refused in both languages, the one in
    the folder is no dump. In a child process with a deadline, so a regression fails instead of hanging."""
    import os
    import subprocess
    import sys

    os.mkfifo(tmp_path / "pipe.jsonl")
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    os.mkfifo(dumps / "1.jsonl")
    for step in (2, 3):
        write_verl(dumps / f"{step}.jsonl", verl_step(step))
    code = """
import json, sys
from pathlib import Path
from rlvitals.errors import UnknownFormatError
from rlvitals.rollout.readers import dump_files, read_rollouts
try:
    read_rollouts(sys.argv[1])
except UnknownFormatError as exc:
    refused = [str(exc), exc.text("zh")]
print(json.dumps([refused, [p.name for p in dump_files(sorted(Path(sys.argv[2]).iterdir()))]]))
"""
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "pipe.jsonl"), str(dumps)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (en, zh), found = json.loads(done.stdout)
    assert en == (f"{tmp_path / 'pipe.jsonl'}: a FIFO, not a log file; it was not opened (reading a FIFO or a "
                  "device would wait forever or never end)")
    assert zh.startswith(f"{tmp_path / 'pipe.jsonl'}：这是一个 FIFO（命名管道），不是日志文件；")
    assert found == ["2.jsonl", "3.jsonl"]
