"""The readers' errors, skip reasons and notes carry their Chinese: ``inspect --lang zh`` says a bad input's
problem in Chinese, while the English (``str(exc)``, ``--json``, the English output) stays as it was."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

import rlvitals
from rlvitals.cli import main
from rlvitals.words import in_lang, translated


def _inspect(path: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["inspect", str(path), *extra], out, err)
    return code, out.getvalue(), err.getvalue()


def test_an_empty_file_is_told_in_chinese_and_in_english(tmp_path: Path) -> None:
    f = tmp_path / "train.jsonl"
    f.write_text("")
    code, out, err = _inspect(f, "--lang", "zh")
    assert code == 2 and out == "" and err == f"rlvitals：{f}：文件是空的；这里应当是一份训练日志\n"
    code, _, err = _inspect(f)
    assert code == 2 and err == f"rlvitals: {f}: the file is empty; expected a training log\n"


def test_a_missing_path_is_told_in_chinese(tmp_path: Path) -> None:
    f = tmp_path / "nowhere.log"
    assert _inspect(f, "--lang", "zh")[2] == f"rlvitals：{f}：没有这个文件或文件夹\n"
    assert _inspect(f)[2] == f"rlvitals: {f}: no such file or folder\n"


def test_a_file_no_reader_takes_is_told_in_chinese(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("nothing here looks like a metric\nnor here\n")
    err = _inspect(f, "--lang", "zh")[2]
    assert err.startswith(f"rlvitals：{f}：这个文件不是 rlvitals 能读的训练日志（试过：wandb-offline, ")
    assert err.endswith("）；可以用 --format 指定读取器\n") and "this file" not in err
    assert _inspect(f)[2].startswith(f"rlvitals: {f}: this file is not a training log rlvitals can read (tried: ")


def test_a_folder_of_no_log_is_told_in_chinese(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("hello\n")
    err = _inspect(tmp_path, "--lang", "zh")[2]
    assert err == (f"rlvitals：{tmp_path}：这个文件夹不是 rlvitals 认识的运行（W&B、MLflow、TensorBoard、Trainer 的 "
                   "output_dir），它和它的子文件夹里都没有 rlvitals 能读的训练日志（里面有 readme.txt）；"
                   "请直接传入日志文件\n")
    assert _inspect(tmp_path)[2] == (
        f"rlvitals: {tmp_path}: this folder is not a run rlvitals knows (W&B, MLflow, TensorBoard, a Trainer "
        "output_dir) and holds no training log rlvitals can read, nor do its subfolders (it holds readme.txt); "
        "pass the log file itself\n")


def test_an_unknown_format_name_is_told_in_chinese(tmp_path: Path) -> None:
    f = tmp_path / "train.jsonl"
    f.write_text('{"step": 1, "loss": 0.5}\n')
    err = _inspect(f, "--format", "nonsense", "--lang", "zh")[2]
    assert err.startswith("rlvitals：未知的格式 'nonsense'；可用的格式：wandb-offline, ")
    assert _inspect(f, "--format", "nonsense")[2].startswith("rlvitals: unknown format 'nonsense'; expected one of: ")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_not_opened_and_is_told_in_chinese(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    assert _inspect(fifo, "--lang", "zh")[2].startswith(f"rlvitals：{fifo}：这是一个 FIFO（命名管道），不是日志文件；")


def test_a_notebook_cut_short_is_told_in_chinese(tmp_path: Path) -> None:
    f = tmp_path / "train.ipynb"
    f.write_text('{"cells": [{"cell_type": "code", "outputs": [')
    err = _inspect(f, "--format", "notebook", "--lang", "zh")[2]
    assert err.startswith(f"rlvitals：{f} 第 1 行第 ") and "列：不是有效的 JSON（" in err
    assert err.endswith("）；应为 Jupyter notebook（.ipynb）——文件是不是不完整？\n")
    assert "expected a Jupyter notebook (.ipynb) — was the file cut short?" in _inspect(f, "--format", "notebook")[2]


def test_a_bad_jsonl_line_is_skipped_with_a_chinese_reason(tmp_path: Path) -> None:
    f = tmp_path / "train.jsonl"
    f.write_text('{"step": 1, "loss": 0.5}\n{"step": 2, "loss": \n[1, 2]\n{"step": 4, "loss": 0.3}\n')
    run = rlvitals.load(f)[0]
    bad, array = run.skipped.reasons
    assert bad == f"{f}:2: invalid JSON (Expecting value at column 21); the line was skipped"  # English as before
    assert in_lang(bad, "zh") == f"{f}:2: 不是有效的 JSON（Expecting value at column 21）；这一行已跳过"
    assert in_lang(array, "zh") == f"{f}:3: 应为 JSON 对象，读到的是 list；这一行已跳过"
    code, out, _ = _inspect(f, "--json")
    assert code == 0 and json.loads(out)["skipped"]["reasons"][0] == bad  # --json stays English


def test_a_line_without_its_step_and_a_step_that_is_no_integer(tmp_path: Path) -> None:
    f = tmp_path / "train.jsonl"
    f.write_text('{"step": 1, "loss": 0.5}\n{"loss": 0.4}\n{"step": "x", "loss": 0.3}\n{"step": 4, "loss": 0.2}\n')
    no_step, not_int = rlvitals.load(f)[0].skipped.reasons
    assert in_lang(no_step, "zh") == f"{f}:2: 这一行没有 'step'；这一行已跳过"
    assert in_lang(not_int, "zh") == f"{f}:3: 步数 'x' 不是整数；这一行已跳过"


def test_a_csv_without_a_step_column_is_noted_in_chinese(tmp_path: Path) -> None:
    f = tmp_path / "metrics.csv"
    f.write_text("loss,reward\n0.5,0.1\n0.4,abc\n")
    run = rlvitals.load(f)[0]
    note = next(n for n in run.notes if "no step column" in n)
    assert translated(note) and in_lang(note, "zh").startswith(f"{f}：没有步数列（")
    assert in_lang(note, "zh").endswith("）；各行依次编为第 1、2、3…… 步")
    assert in_lang(run.skipped.reasons[0], "zh") == f"{f}:3: 'reward' 的值 'abc' 不是数字；这个值已跳过"


def test_a_verl_console_line_cut_at_the_end_is_noted_in_chinese(tmp_path: Path) -> None:
    f = tmp_path / "train.log"
    f.write_text("step:1 - actor/entropy:0.5 - critic/score/mean:0.1\n"
                 "step:2 - actor/entropy:0.4 - critic/score/mean:0.2")  # no newline: still being written
    run = rlvitals.load(f)[0]
    note = next(n for n in run.notes if "the last line has no newline" in n)
    assert in_lang(note, "zh") == f"{f} 第 2 行：最后一行没有换行符（日志还在写入？）；它的最后一个值可能不完整"


def test_a_tensorboard_file_cut_short_is_skipped_with_a_chinese_reason(tmp_path: Path) -> None:
    tbx = pytest.importorskip("tensorboardX")
    w = tbx.SummaryWriter(str(tmp_path))
    for step in range(5):
        w.add_scalar("train/loss", step / 8, step)
    w.close()
    [f] = tmp_path.glob("events.out.tfevents.*")
    f.write_bytes(f.read_bytes()[:-3])
    [reason] = rlvitals.load(tmp_path)[0].skipped.reasons
    assert reason.endswith(": truncated record (the file ends mid-record; still being written?); "
                           "the rest of the file was skipped")
    assert in_lang(reason, "zh") == reason.split(": ", 1)[0] + (
        ": 记录不完整（文件在一条记录中间结束；还在写入？）；文件余下的部分已跳过")
