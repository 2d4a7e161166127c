"""With ``--lang zh`` the rollout readers' and writers' errors, notes and skip reasons read in Chinese: each
is made on real files (or real objects) through the public API, and its Chinese is checked, with the English
unchanged beside it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli.test_zh import english_prose

from rlvitals.cli import main
from rlvitals.errors import EmptyInputError, InputError, MissingInputError, RlvitalsError, UnknownFormatError
from rlvitals.rollout.readers import (
    ColumnMap,
    parse_reward_weights,
    read_rollouts,
    rollouts_from_frame,
    rollouts_from_python,
    rollouts_from_records,
)
from rlvitals.rollout.writers import group_advantages, write_trl_completions, write_verl_dump
from rlvitals.words import in_lang, translated

NAN = float("nan")


def _zh(exc: pytest.ExceptionInfo[RlvitalsError]) -> str:
    assert translated(exc.value.args[0]), str(exc.value)
    return exc.value.text("zh")


def _completions(path: Path, n: int = 4, **rewards: list[float]) -> Path:
    """One step of TRL completions as TRL's pandas ``to_parquet`` writes them (pyarrow)."""
    pq.write_table(pa.table({"step": ["1"] * n, "prompt": [f"q{i // 2}" for i in range(n)],
                             "completion": [f"a{i}" for i in range(n)], **rewards}), path)
    return path


def _note(notes: list[str], start: str) -> str:
    found = [n for n in notes if n.startswith(start)]
    assert len(found) == 1, notes
    assert translated(found[0]), found[0]
    return in_lang(found[0], "zh")


# --- read_rollouts: the path -----------------------------------------------------------------

def test_an_empty_folder_a_missing_path_and_an_unknown_file(tmp_path: Path) -> None:
    with pytest.raises(EmptyInputError, match="the folder is empty; point at a folder of rollout dumps") as e:
        read_rollouts(tmp_path)
    assert _zh(e) == f"{tmp_path}：文件夹是空的；请指向存放 rollout 文件的文件夹"
    with pytest.raises(MissingInputError, match="no such file or folder") as m:
        read_rollouts(tmp_path / "nowhere")
    assert _zh(m) == f"{tmp_path / 'nowhere'}：没有这个文件或文件夹；请给出 rollout 文件或文件夹的路径"
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(UnknownFormatError, match="not a rollout file rlvitals knows") as u:
        read_rollouts(tmp_path / "notes.txt")
    assert _zh(u) == (f"{tmp_path / 'notes.txt'}：不是 rlvitals 认识的 rollout 文件（应为 veRL 的 <step>.jsonl、"
                      "TRL 的 completions_<step>.parquet，或带列映射的 JSONL/Parquet/CSV）")
    with pytest.raises(InputError, match="group_size=0 must be a positive number") as g:
        read_rollouts(tmp_path / "notes.txt", group_size=0)
    assert _zh(g) == "group_size=0 应为每个 prompt 的采样数，必须是正数"


def test_a_folder_with_no_rollout_files_lists_what_it_holds(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "completions").mkdir(parents=True)
    for i in range(7):
        (out / f"events.{i}.log").write_text("x")
    with pytest.raises(UnknownFormatError, match=r"its completions/ folder holds nothing; expected veRL") as e:
        read_rollouts(out)
    listed = "completions/、events.0.log、events.1.log、events.2.log、events.3.log、events.4.log …（共 8 个）"
    assert _zh(e) == (f"{out}：没有找到 rollout 文件：文件夹里有 {listed}；其中的 completions/ 文件夹是空的；"
                      "应为 veRL 的 <step>.jsonl 文件、TRL 的 completions_<step>.parquet（在这里或在 completions/ "
                      "中），或带列映射（--score/--group …）的 JSONL/Parquet/CSV 文件")
    (out / "completions" / "trainer_state.json").write_text("{}")
    with pytest.raises(UnknownFormatError, match=r"\(8 in all\); its completions/ folder holds trainer_state.json"):
        read_rollouts(out)
    with pytest.raises(UnknownFormatError) as mapped:
        read_rollouts(out, columns=ColumnMap(score="r"))
    assert "；其中的 completions/ 文件夹里有 trainer_state.json；" in _zh(mapped)
    assert _zh(mapped).endswith("或JSONL/Parquet/CSV 文件（按列选项读取）")


def test_reward_weights_on_a_file_that_is_not_trl(tmp_path: Path) -> None:
    f = tmp_path / "samples.jsonl"
    f.write_text('{"prompt": "q", "response": "a", "score": 1.0}\n')
    with pytest.raises(InputError, match=r"reward_weights apply to TRL completions .* read as 'jsonl'") as e:
        read_rollouts(f, reward_weights=[1.0])
    assert _zh(e) == (f"{f}：reward_weights 只适用于 TRL 的 completions_<step>.parquet（每个 reward 函数一列），"
                      "而这里是按 'jsonl' 读取的；请去掉 reward_weights，或把总 reward 列映射为分数")


def test_a_generic_table_that_cannot_be_read_or_names_no_response(tmp_path: Path) -> None:
    bad = tmp_path / "samples.parquet"
    bad.write_bytes(b"PAR1 this is not a parquet file")
    with pytest.raises(InputError, match=r"samples\.parquet: cannot be read as PARQUET \(.*\); check the file") as e:
        read_rollouts(bad, columns=ColumnMap(score="r"))
    assert _zh(e).startswith(f"{bad}：无法按 PARQUET 读取（") and _zh(e).endswith("）；请检查这个文件")
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"question": "q", "answer": "a"}\n')
    with pytest.raises(UnknownFormatError, match=r"columns \['question', 'answer'\] name no rollout response") as u:
        read_rollouts(plain)
    assert _zh(u) == (f"{plain}：列 ['question', 'answer'] 中没有 rollout 的回答或分数；请用 --response COLUMN 和 "
                      "--score COLUMN 指出（prompt 分组用 --group COLUMN）")


# --- TRL completions ------------------------------------------------------------------------

def test_a_damaged_completions_file_is_skipped_in_chinese(tmp_path: Path) -> None:
    _completions(tmp_path / "completions_00001.parquet", accuracy_reward=[1.0, 0.0, 1.0, 0.0])
    (tmp_path / "completions_00002.parquet").write_bytes(b"PAR1 this is not a parquet file")
    rs = read_rollouts(tmp_path)
    assert rs.skips.count == 1 and rs.table.height == 4
    reason = rs.skips.reasons[0]
    assert reason.endswith("; the file was skipped")
    zh = in_lang(reason, "zh")
    assert zh.startswith(f"{tmp_path / 'completions_00002.parquet'}: 无法按 Parquet 读取（")
    assert zh.endswith("）；已跳过这个文件")


def test_the_trl_score_and_correctness_notes_in_chinese(tmp_path: Path) -> None:
    path = _completions(tmp_path / "completions_00001.parquet", accuracy_reward=[1.0, 0.0, 1.0, NAN],
                        format_reward=[0.5, 0.5, 0.0, 0.5])
    notes = read_rollouts(path).notes
    assert _note(notes, "score = plain sum") == (
        "分数 = 各 reward 函数的直接求和 ['accuracy_reward', 'format_reward']：TRL 按 reward_weights 加权，而 "
        "completions_<step>.parquet 不记录这些权重，这里假定权重都是 1（若训练用了别的权重，请传入 reward_weights，"
        "命令行用 --reward-weights）")
    assert _note(notes, "correctness from the accuracy-type") == (
        "对错取自准确率类的 reward 列 'accuracy_reward'（accuracy_reward >= 1.0 为对，NaN 为未知；准确率类指列名含 "
        "'accuracy'、'correct' 或单词 'acc' 的 reward 列）；要换一列请用 --correct COLUMN")
    weighted = read_rollouts(path, reward_weights=[2.0, 1.0]).notes
    assert _note(weighted, "score = weighted sum") == (
        "分数 = 各 reward 函数的加权和 {'accuracy_reward': 2.0, 'format_reward': 1.0}，与 TRL 的 nansum 一样忽略 NaN")
    two = tmp_path / "two" / "completions_00001.parquet"
    two.parent.mkdir()
    _completions(two, length_reward=[0.2, 0.9, 1.0, 0.4], format_reward=[1.0, 0.0, 1.0, 0.0])
    assert _note(read_rollouts(two).notes, "several reward functions") == (
        "有多个 reward 函数 ['length_reward', 'format_reward']，但没有一个是准确率类（列名含 'accuracy'、'correct' 或"
        "单词 'acc'）：对错记为未知，不从总分去猜，因此 pass@k、maj@k、G-Pass@k 以及全对/全错拆分都不计算；请用 "
        "--correct COLUMN 指定对错列")
    acc = tmp_path / "acc" / "completions_00001.parquet"
    acc.parent.mkdir()
    _completions(acc, acc_reward=[1.0, 0.0, 1.0, 0.0], accuracy_v2=[1.0] * 4)
    assert _note(read_rollouts(acc).notes, "several accuracy-type").startswith(
        "有多个准确率类的 reward 列 ['acc_reward', 'accuracy_v2']：对错记为未知")


def test_a_reward_column_an_eval_step_and_no_reward_in_chinese(tmp_path: Path) -> None:
    _completions(tmp_path / "completions_00001.parquet", reward=[1.0, 0.0, 1.0, 0.0])
    _completions(tmp_path / "completions_00002.parquet", reward=[1.0, 0.0, 1.0, 0.0])
    _completions(tmp_path / "completions_00003.parquet", n=2, reward=[1.0, 0.0])
    notes = read_rollouts(tmp_path, reward_weights=[1.0]).notes
    assert _note(notes, "the files have a 'reward' column") == \
        "文件里有 'reward' 列（加权后的总分）：以它为分数，用不到 reward_weights"
    assert _note(notes, "1 file(s) have a row count other than 4") == (
        f"有 1 个文件的行数不是 4（如 {tmp_path / 'completions_00003.parquet'}）：在同时做 eval 的步上，TRL 会用 eval "
        "的生成结果覆盖训练的生成结果")
    none = tmp_path / "none" / "completions_00001.parquet"
    none.parent.mkdir()
    _completions(none)
    assert _note(read_rollouts(none).notes, "no reward column found") == "没有找到 reward 列：表里没有分数"


def test_reward_weights_that_do_not_fit_in_chinese(tmp_path: Path) -> None:
    path = _completions(tmp_path / "completions_00007.parquet", accuracy_reward=[1.0, 0.0, 1.0, 0.0],
                        format_reward=[1.0, 1.0, 0.0, 0.0])
    cols, funcs = "['step', 'prompt', 'completion', 'accuracy_reward', 'format_reward']", \
        "['accuracy_reward', 'format_reward']"
    fix = ("请为每个 reward 函数给一个权重，例如 reward_weights={'accuracy_reward': 1.0, 'format_reward': 1.0}，"
           "或按这个顺序给出 2 个数")
    with pytest.raises(InputError, match=r"reward_weights names \['accuracy'\] that are not") as e:
        read_rollouts(path, reward_weights={"accuracy": 1.0, "format_reward": 1.0})
    assert _zh(e) == (f"{path}：reward_weights 中的 ['accuracy'] 不是 reward 函数列；文件的列是 {cols}，其中的 reward "
                      f"函数是 {funcs}；{fix}")
    with pytest.raises(InputError, match=r"reward_weights lacks \['format_reward'\]") as e:
        read_rollouts(path, reward_weights={"accuracy_reward": 1.0})
    assert _zh(e).startswith(f"{path}：reward_weights 缺少 ['format_reward']；文件的列是 ")
    with pytest.raises(InputError, match=r"reward_weights has 3 weight\(s\)") as e:
        read_rollouts(path, reward_weights=[1.0, 1.0, 1.0])
    assert _zh(e) == (f"{path}：reward_weights 有 3 个权重，但文件有 2 个 reward 函数列 {funcs}（全部列：{cols}）；"
                      f"{fix}")
    with pytest.raises(InputError, match=r"reward_weights \[nan\] are not finite numbers") as e:
        read_rollouts(path, reward_weights=[1.0, NAN])
    assert _zh(e) == f"{path}：reward_weights 中的 [nan] 不是有限的数；{fix}"
    with pytest.raises(InputError, match=r"the score column is given \('format_reward'\)") as e:
        read_rollouts(path, reward_weights=[1.0, 1.0], columns=ColumnMap(score="format_reward"))
    assert _zh(e) == (f"{path}：已经指定了分数列（'format_reward'），reward_weights 没有 reward 函数可加权；"
                      "分数列和 reward_weights 只能给其中一个")
    with pytest.raises(InputError, match=r"--reward-weights 'a=1,2': expected name=weight pairs") as e:
        parse_reward_weights("a=1,2")
    assert _zh(e) == ("--reward-weights 'a=1,2'：应为 name=weight 形式的若干对，如 "
                      "accuracy_reward=1,format_reward=0.5，或按 reward 列的顺序给出的权重，如 1,0.5")


# --- Python objects ---------------------------------------------------------------------------

def test_python_objects_that_are_not_rollouts_in_chinese() -> None:
    rs = rollouts_from_records([{"prompt": "q", "score": 1.0}, ["not", "a", "dict"]])
    assert rs.skips.reasons == ["record 1: expected a dict, got list; the record was skipped"]
    assert in_lang(rs.skips.reasons[0], "zh") == "record 1: 应为 dict，读到的是 list；这条记录已跳过"
    with pytest.raises(InputError, match="rollouts_from_frame: got int") as e:
        rollouts_from_frame(3)
    assert _zh(e) == ("rollouts_from_frame：收到的是 int；应为 polars 或 pandas 的 DataFrame、NumPy 结构化数组，"
                      "或由各列组成的 dict")
    with pytest.raises(InputError, match="got the str 'runs/rollouts'") as e:
        rollouts_from_python("runs/rollouts")
    assert _zh(e) == ("收到的是 str 'runs/rollouts'；路径请以 pathlib.Path 给出，或用 read_rollouts 读取；"
                      "也可以给出记录或数据帧")
    with pytest.raises(InputError, match="an array of scores has none") as e:
        rollouts_from_python(np.array([[1.0, 0.0]]), columns=ColumnMap(score="r"))
    assert _zh(e) == "列映射指定的是记录或数据帧的列；分数数组没有列（行是组，列是样本）：请去掉 columns="
    with pytest.raises(InputError, match="got float; expected a path, records") as e:
        rollouts_from_python(2.5)
    assert _zh(e) == ("收到的是 float；应为路径、记录（dict）、polars 或 pandas 的 DataFrame、由各列组成的 dict，"
                      "或 NumPy 分数数组")


# --- writers ----------------------------------------------------------------------------------

def test_the_writers_refuse_bad_records_in_chinese(tmp_path: Path) -> None:
    rec = {"prompt": "1+1?", "response": "2", "score": 1.0}
    with pytest.raises(InputError, match=r"write_verl_dump: step=-1; expected a training step") as e:
        write_verl_dump([rec], tmp_path, step=-1)
    assert _zh(e) == "write_verl_dump：step=-1；应为训练步数，即 >= 0 的整数"
    with pytest.raises(InputError, match="write_trl_completions: no records for step 3") as e:
        write_trl_completions([], tmp_path, step=3)
    assert _zh(e) == "write_trl_completions：第 3 步没有记录；一次导出至少要有一条 rollout"
    with pytest.raises(InputError, match=r"record 1 has no \['score'\]") as e:
        write_verl_dump([rec, {"response": "3"}], tmp_path, step=3)
    assert _zh(e) == "write_verl_dump：第 1 条记录缺少 ['score']；每条 rollout 都要有 response 和 score"
    with pytest.raises(InputError, match="record 0 is from step 2, not step 3") as e:
        write_trl_completions([{**rec, "step": 2}], tmp_path, step=3)
    assert _zh(e) == "write_trl_completions：第 0 条记录属于第 2 步，不是第 3 步；请把每一步的记录写进各自的文件"
    with pytest.raises(InputError, match="group_advantages: 2 rewards but 1 group keys") as e:
        group_advantages([1.0, 0.0], ["a"])
    assert _zh(e) == "group_advantages：有 2 个 reward，却有 1 个组键；每个 reward 要有一个组键"
    assert not list(tmp_path.iterdir())  # nothing was written


# --- the command line -------------------------------------------------------------------------

def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def test_rollouts_of_an_empty_folder_and_of_weights_on_a_jsonl_in_chinese(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = _cli("rollouts", str(empty), "--lang", "zh")
    assert (code, out) == (2, "") and err == f"rlvitals：{empty}：文件夹是空的；请指向存放 rollout 文件的文件夹\n"
    assert not english_prose(err)
    english = _cli("rollouts", str(empty))[2]
    assert english == f"rlvitals: {empty}: the folder is empty; point at a folder of rollout dumps\n"
    f = tmp_path / "samples.jsonl"
    f.write_text(json.dumps({"prompt": "q", "response": "a", "score": 1.0}) + "\n")
    code, out, err = _cli("rollouts", str(f), "--reward-weights", "1,0.5", "--lang", "zh")
    assert code == 2 and err.startswith(f"rlvitals：{f}：reward_weights 只适用于 TRL 的 completions_<step>.parquet")
    assert not english_prose(err, {"jsonl"})  # the format read, as --json names it
