"""What load(), the launches of one run and diagnose() tell a user carries its Chinese (``--lang zh``), and the
English stays as it was."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

import rlvitals
from rlvitals.cli import main
from rlvitals.errors import EmptyInputError, InputError, RlvitalsError
from rlvitals.run.concat import load_launches
from rlvitals.words import in_lang, translated


def test_an_empty_run_among_several_is_noted_in_chinese(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text("Step,runA - train/loss,runB - train/loss\n1,0.5,\n2,0.4,\n")
    [run] = rlvitals.load(f)
    note = next(n for n in run.notes if "skipped an empty run" in n)
    assert note == f"skipped an empty run — {f}#run=runB: read as csv but it holds no metrics"
    assert in_lang(note, "zh") == f"跳过了一个空的运行——{f}#run=runB：按 csv 读取，但其中没有指标"
    export = next(n for n in run.notes if "W&B export" in n)
    assert in_lang(export, "zh") == f"{f}：W&B 导出；读取了运行 'runA'（去掉了前缀 'runA - '）"


def test_every_run_empty_is_told_in_chinese_by_the_cli(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text("Step,runA - train/loss,runB - train/loss\n1,,\n2,,\n")
    with pytest.raises(EmptyInputError, match=r"none of its 2 runs holds metrics; first: .*runA") as caught:
        rlvitals.load(f)
    assert caught.value.text("zh") == (f"{f}：其中的 2 个运行都没有指标；第一个：{f}#run=runA：按 csv 读取，"
                                       "但其中没有指标")
    out, err = io.StringIO(), io.StringIO()
    assert main(["inspect", str(f), "--lang", "zh"], out, err) == 2
    assert err.getvalue() == f"rlvitals：{caught.value.text('zh')}\n"


def test_an_unreadable_only_line_is_named_in_chinese_when_the_run_is_empty(tmp_path: Path) -> None:
    f = tmp_path / "train.jsonl"
    f.write_text('{"step": "x", "loss": 0.5}\n')
    with pytest.raises(EmptyInputError) as caught:
        rlvitals.load(f)
    assert str(caught.value) == (f"{f}: read as jsonl but it holds no metrics; 1 records were unreadable, first: "
                                 f"{f}:1: step 'x' is not an integer; the line was skipped")
    assert caught.value.text("zh") == (f"{f}：按 jsonl 读取，但其中没有指标；有 1 条记录读不出来，第一条：{f}:1: "
                                       "步数 'x' 不是整数；这一行已跳过")


def test_a_folder_of_several_runs_to_diagnose_is_told_in_chinese(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text("Step,runA - train/loss,runB - train/loss\n1,0.5,0.6\n2,0.4,0.5\n")
    with pytest.raises(RlvitalsError, match="holds 2 runs; diagnose each") as caught:
        rlvitals.diagnose(f)
    assert caught.value.text("zh") == (f"{f}：其中有 2 个运行；请逐个诊断：[rlvitals.diagnose(r) for r in "
                                       f"rlvitals.load({str(f)!r})]")


def test_the_launches_of_one_run_are_told_in_chinese(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no log given") as caught:
        load_launches([])
    assert caught.value.text("zh") == "没有给出日志：请传入这次运行各次启动的日志，每次启动一个文件"
    a, b = tmp_path / "a.jsonl", tmp_path / "b.log"
    a.write_text("".join(json.dumps({"step": s, "data": {"actor/entropy": s / 10}}) + "\n" for s in (1, 2)))
    b.write_text("{'loss': 0.5, 'learning_rate': 1e-05, 'epoch': 0.5}\n{'loss': 0.4, 'learning_rate': 1e-05, "
                 "'epoch': 1.0}\n")
    with pytest.raises(InputError, match="these logs are not the launches of one run") as caught:
        load_launches([a, b])
    assert caught.value.text("zh") == (f"这些日志不是同一次运行的各次启动：{a} 是 verl 日志，{b} 是 trl 日志；"
                                       "请给出同一次运行的日志（要比较它们就去掉 --one-run）")


def test_a_launch_s_notes_keep_their_chinese_under_its_name(tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("loss,reward\n0.5,0.1\n0.4,0.2\n")  # no step column: a note
    b.write_text("loss,reward\n0.3,0.3\n")
    run = load_launches([a, b])
    noted = [n for n in run.notes if "no step column" in n]
    assert noted and all(translated(n) for n in noted)
    assert in_lang(noted[0], "zh").startswith(f"{a}: {a}：没有步数列（")
    logged_again = next(n for n in run.notes if "logged again" in n)
    assert translated(logged_again) and "又被" in in_lang(logged_again, "zh")


def test_a_followed_log_keeps_its_chinese_over_a_restart(tmp_path: Path) -> None:
    from rlvitals.ingest import find_reader
    from rlvitals.run.follow import Follow, LineSource
    from rlvitals.watch.state import WatchState

    log = tmp_path / "run.jsonl"
    log.write_text('{"step": 1, "actor/entropy": 0.5}\n{"step": "x", "actor/entropy": 0.4}\n'
                   '{"step": 3, "actor/entropy": 0.3}\n')
    src = LineSource(log, find_reader(log), records=())
    src.poll()
    state = WatchState(tmp_path / "state.db")
    state.commit({str(log): src.state()}, {}, [], [], {str(log): src.pending()})
    state.close()
    state = WatchState(tmp_path / "state.db")
    again = LineSource(log, find_reader(log), state.sources()[str(log)], state.packed(str(log)))
    state.close()
    run = again.run()
    assert run is not None and run.skipped.reasons == [f"{log}:2: step 'x' is not an integer; the line was skipped"]
    assert in_lang(run.skipped.reasons[0], "zh") == f"{log}:2: 步数 'x' 不是整数；这一行已跳过"
    waiting = Follow(tmp_path / "later.jsonl", None, 0.0)
    assert not waiting.poll(0.0)
    assert waiting.messages == [f"{tmp_path / 'later.jsonl'}: no such file or folder; waiting for it to appear"]
    assert in_lang(waiting.messages[0], "zh") == f"{tmp_path / 'later.jsonl'}：没有这个文件或文件夹；等它出现"


def test_series_derived_from_rollouts_are_noted_in_chinese() -> None:
    import polars as pl
    from runs import make_run

    run = make_run({"actor/entropy": [0.5, 0.4, 0.3]})
    out = run.with_series(pl.DataFrame({"step": [2, 3, 4], "pass@4": [0.5, 0.6, 0.7]}))
    assert out.notes[-1] == "1 series derived from rollouts joined on 3 steps"
    assert in_lang(out.notes[-1], "zh") == "由 rollout 样本推导出的 1 个序列已并入，共 3 步"
