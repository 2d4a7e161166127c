"""Under ``--lang zh`` what the CLI itself says is Chinese: the usage errors of the rollout options and of
``watch``/``serve``, the lines it writes straight to stderr, and the progress shown on a terminal (the phase
names, the counted things, what is being read). Each message is made for real, by the command that says it;
the English stays as it was (the other tests match it)."""

from __future__ import annotations

import importlib.util
import io
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rlvitals.cli import main
from rlvitals.cli._common import _message, paired_runs
from rlvitals.cli.progress import status_line, words, working
from rlvitals.rollout.tags import parse_tag
from rlvitals.words import Words, in_lang

from .test_zh import english_prose


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _cli(*argv: str, err: io.StringIO | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), err if err is not None else io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def _frames(raw: str) -> list[str]:
    """What a terminal showed, one redraw a line: control sequences and the bar's glyphs left out."""
    text = re.sub("[━╸╺]+", " ", re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw))
    return [" ".join(line.split()) for line in re.split(r"[\r\n]", text) if line.strip()]


# --- the rollout options ---------------------------------------------------------------------------

def test_rollout_options_without_rollouts_are_refused_in_chinese() -> None:
    code, out, err = _cli("diagnose", "run.log", "--tool-cap", "2", "--lang", "zh")
    assert (code, out) == (2, "")
    assert err == ("rlvitals：--tool-cap：这个选项规定怎样读取和分析 rollout，但没有给出 --rollouts DIR；"
                   "请加上 --rollouts DIR（这次训练的 rollout 导出文件），或者去掉 --tool-cap\n")
    err = _cli("report", "run.log", "-o", "r.html", "--score", "r", "--embed", "--lang", "zh")[2]
    assert err == ("rlvitals：--score、--embed：这些选项规定怎样读取和分析 rollout，但没有给出 --rollouts DIR；"
                   "请加上 --rollouts DIR（这次训练的 rollout 导出文件），或者去掉 --score 和 --embed\n")
    assert not english_prose(err)
    assert _cli("diagnose", "run.log", "--tool-cap", "2")[2].startswith("rlvitals: --tool-cap: this option says")


BAD = [
    (["--tool-cap", "0"], "--tool-cap 0：上限是一个 rollout 最多能调用工具的次数，应为不小于 1 的整数"),
    (["--max-response-length", "-3"], "--max-response-length -3：上限是 token 数，应不小于 1"),
    (["--group-size", "0"], "--group-size 0：组大小是每个 prompt 的 rollout 数，应为不小于 1 的整数"),
    (["--n-states", "-1"], "--n-states -1：状态空间的大小是环境的状态个数，应为不小于 1 的整数"),
    (["--ood-source", "x"], "--ood-source 需要同时给出 --id-source：差距是分布内减去分布外"),
    (["--id-source", "a", "--ood-source", "a"], "--id-source 和 --ood-source 都列出了 a：一个数据源要么在分布内，"
                                               "要么在分布外；只给一次"),
    (["--k", "0,2"], "--k '0,2'：每个 k 都至少为 1"),
    (["--k", "1,x"], "--k '1,x'：应为逗号分隔的整数（如 1,2,4,8），或者 all"),
]


@pytest.mark.parametrize(("flags", "said"), BAD, ids=[" ".join(f) for f, _ in BAD])
@pytest.mark.parametrize("command", ["rollouts", "diagnose", "watch"])
def test_bad_rollout_options_are_refused_in_chinese(tmp_path: Path, command: str, flags: list[str],
                                                    said: str) -> None:
    nowhere = str(tmp_path / "nowhere")  # never read: the options are checked first
    where = [nowhere] if command == "rollouts" else [nowhere, "--rollouts", nowhere]
    code, out, err = _cli(command, *where, *flags, "--lang", "zh")
    assert (code, out, err) == (2, "", f"rlvitals：{said}\n")
    assert not english_prose(err, ["all"])  # --k all: the option's value


def test_a_segment_tag_error_keeps_the_chinese_it_was_written_with(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as bad:
        parse_tag("a b c")
    err = _cli("diagnose", "run.log", "--rollouts", str(tmp_path), "--think-tag", "a b c", "--lang", "zh")[2]
    assert err == f"rlvitals：--think-tag {in_lang(bad.value.args[0], 'zh')}\n"
    assert _cli("diagnose", "run.log", "--rollouts", str(tmp_path), "--think-tag", "a b c")[2] == \
        f"rlvitals: --think-tag {bad.value}\n"


def test_a_settings_error_is_passed_on_with_its_chinese() -> None:
    said = _message(ValueError(Words("ks must be positive integers", "ks 必须是正整数")))
    assert said == "ks must be positive integers" and in_lang(said, "zh") == "ks 必须是正整数"
    assert _message(ValueError("plain", 3)) == "('plain', 3)" and _message(TypeError()) == ""


# --- pairing runs with their rollouts --------------------------------------------------------------

def test_rollout_folders_that_do_not_pair_with_the_runs_are_refused_in_chinese() -> None:
    code, _, err = _cli("diagnose", "a.log", "b.log", "--rollouts", "d", "--lang", "zh")
    assert code == 2 and err == ("rlvitals：给了 2 个 RUN，却有 1 个 --rollouts；一次训练的 rollout 不能用在"
                                 "另一次训练上：每个 RUN 给一次 --rollouts，按 RUN 的顺序给出"
                                 "（没有 rollout 的 RUN 写 '-'）\n")
    assert not english_prose(err)
    code, _, err = _cli("serve", "a", "b", "--rollouts", "d", "--lang", "zh")
    assert code == 2 and err == ("rlvitals：给了 2 个 PATH，却有 1 个 --rollouts；一次训练的 rollout 不能用在"
                                 "另一次训练上：每个 PATH 给一次 --rollouts，按 PATH 的顺序给出"
                                 "（没有 rollout 的 PATH 写 '-'）\n")
    code, _, err = _cli("diagnose", "a.log", "b.log", "--one-run", "--rollouts", "d1", "--rollouts", "d2",
                        "--lang", "zh")
    assert code == 2 and err == ("rlvitals：--one-run 把这 2 个 PATH 当作同一次训练读取，只能配一个 --rollouts DIR"
                                 "（这次训练的 rollout 文件夹），而不是 2 个\n")
    assert not english_prose(err)
    assert _cli("serve", "a", "b", "--rollouts", "d")[2].startswith("rlvitals: 2 paths given but 1 --rollouts;")


def test_a_folder_of_several_runs_cannot_take_one_rollout_folder_in_chinese(tmp_path: Path, log: Path,
                                                                              rollouts: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / "two" / name).mkdir(parents=True)
        shutil.copyfile(log, tmp_path / "two" / name / "train.jsonl")
    code, _, err = _cli("diagnose", str(tmp_path / "two"), "--rollouts", str(rollouts), "--lang", "zh")
    assert code == 2 and err == (f"rlvitals：{tmp_path / 'two'} 里有 2 次训练，它的 --rollouts 无法对应到其中某一次；"
                                 "请把每次训练的文件夹分别作为 RUN 传入，各配自己的 --rollouts\n")
    assert not english_prose(err)
    assert _cli("diagnose", str(tmp_path / "two"), "--rollouts", str(rollouts))[2] == (
        f"rlvitals: {tmp_path / 'two'} holds 2 runs, so its --rollouts cannot be paired with one of them; pass "
        "its run folders as separate RUNs, each with its own --rollouts\n")


def test_the_note_on_the_joined_rollout_series_names_the_folder_in_chinese(log: Path, rollouts: Path) -> None:
    paired = paired_runs([str(log)], [str(rollouts)], None, io.StringIO(), lang="zh")
    assert paired is not None
    note = paired[0][0].notes[-1]
    assert note == f"47 series derived from rollouts in {rollouts} joined on 3 steps"
    assert in_lang(note, "zh") == f"由 {rollouts} 里的 rollout 推导出的 47 个序列已并入，共 3 步"


# --- watch -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("flags", "en", "zh"), [
    (["--interval", "0"], "--interval 0.0 / --cooldown 600.0: expected a positive interval and a cooldown of 0 or "
                          "more seconds", "--interval 0.0 / --cooldown 600.0：间隔应大于 0 秒，冷却时间应不小于 0 秒"),
    (["--cooldown", "-1"], "--interval 0.5 / --cooldown -1.0: expected a positive interval and a cooldown of 0 or "
                           "more seconds", "--interval 0.5 / --cooldown -1.0：间隔应大于 0 秒，冷却时间应不小于 0 秒"),
    (["--tail-steps", "-5"], "--tail-steps -5: expected 0 (no tail pass) or more steps",
     "--tail-steps -5：应为 0（不做尾部检查）或更多步"),
    (["--confirm-looks", "0"], "--confirm-looks 0: expected 1 (alert at once) or more looks",
     "--confirm-looks 0：应为 1（立即告警）或更多次查看"),
    (["--confirm-fail-share", "1.5"], "--confirm-fail-share 1.5: expected a share of the steps read between 0 and 1",
     "--confirm-fail-share 1.5：应为 0 到 1 之间的已读步数占比"),
], ids=["interval", "cooldown", "tail-steps", "confirm-looks", "confirm-fail-share"])
def test_watch_option_errors_in_chinese(tmp_path: Path, flags: list[str], en: str, zh: str) -> None:
    assert _cli("watch", str(tmp_path / "x.log"), *flags) == (2, "", f"rlvitals: {en}\n")
    assert _cli("watch", str(tmp_path / "x.log"), *flags, "--lang", "zh") == (2, "", f"rlvitals：{zh}\n")
    assert not english_prose(zh)


def test_watch_wandb_options_are_refused_in_chinese(tmp_path: Path, log: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    state = ["--state", str(tmp_path / "s.sqlite"), "--once", "--lang", "zh"]
    code, _, err = _cli("watch", str(log), "--wandb-run-id", "abc", *state)
    assert code == 2 and err == ("rlvitals：--wandb-run-id abc：指定 --export-wandb 写入的 W&B run；"
                                 "请同时给出 --export-wandb DIR\n")
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",  # as on a machine without the wandb client
                        lambda name, *rest: None if name == "wandb" else find_spec(name, *rest))
    code, _, err = _cli("watch", str(log), "--export-wandb", str(tmp_path / "wandb"), *state)
    assert code == 2 and err == ("rlvitals：--export-wandb 需要 wandb 客户端，但它没有安装；安装命令："
                                 "pip install 'rlvitals[export]'\n")
    assert not english_prose(err.split("安装命令：")[0], ["wandb"])  # the package and the command stay as they are
    assert _cli("watch", str(log), "--export-wandb", str(tmp_path / "wandb"), *state[:-2])[2] == (
        "rlvitals: --export-wandb needs the wandb client, which is not installed; install it with: "
        "pip install 'rlvitals[export]'\n")


@pytest.mark.process
def test_a_live_watch_starts_with_its_banner_in_chinese(tmp_path: Path, log: Path) -> None:
    watch = subprocess.Popen([sys.executable, "-m", "rlvitals", "watch", str(log), "--lang", "zh", "--state",
                              str(tmp_path / "s.sqlite"), "--interval", "0.05"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert watch.stderr is not None
        first = watch.stderr.readline().decode()
    finally:
        watch.send_signal(signal.SIGINT)
        watch.communicate(timeout=60)
    assert first == f"rlvitals：正在监控 {log}\n"  # (how it stopped is not asked: Ctrl-C may come before its loop)


# --- progress on a terminal ------------------------------------------------------------------------

def test_the_bar_says_the_phases_and_what_they_count_in_chinese() -> None:
    err = _Terminal()
    with working(err, Words("rollouts in d", "d 里的 rollout"), clock=lambda: 0.0, lang="zh") as told:
        assert told is not None
        told("reading", 0, 2)
        told("reading", 2, 2)
        told("embedding", 1, 3)
        told("overall", 3, 3)
    assert [f for f in _frames(err.getvalue()) if "：" in f] == [
        "d 里的 rollout：读取 0/2 个文件", "d 里的 rollout：读取 2/2 个文件", "d 里的 rollout：嵌入回答 1/3 步",
        "d 里的 rollout：整表指标 3/3", "d 里的 rollout：整表指标 3/3"]
    assert words("sampling", 4, None, "zh") == ("采样", "4 组 prompt")
    assert words("early_answering", 1, 8, "zh") == ("提前作答", "1/8")
    assert words("early_answering", 1, 8) == ("early_answering", "1/8")  # said by its name in English, as before
    assert words("writing", 0, 1, "zh") == ("写出页面", "") and words("an_unknown_phase", 2, 3, "zh")[0] == \
        "an_unknown_phase"


def test_the_status_line_is_chinese() -> None:
    err = _Terminal()
    told = status_line(err, Words("rollouts in r", "r 里的 rollout"), clock=lambda: 0.0, lang="zh")
    assert told is not None
    told("reading", 0, 3)
    told("reading", 3, 3)
    assert err.getvalue() == "\r\x1b[2Kr 里的 rollout：读取 0/3 个文件\r\x1b[2K"


def test_reading_a_log_is_shown_in_chinese(tmp_path: Path, log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rlvitals.run  # noqa: F401  # rlvitals.run.load is the function; its module is in sys.modules

    monkeypatch.setattr(sys.modules["rlvitals.run.load"], "PROGRESS_EVERY", 20)
    err = _Terminal()
    assert _cli("inspect", str(log), "--lang", "zh", err=err)[0] == 0
    said = err.getvalue()
    assert f" 读取 {log.name}：20 条记录\r" in said and f" 读取 {log.name}：300 条记录\n" in said


def test_diagnose_shows_the_rollout_analysis_in_chinese(log: Path, rollouts: Path) -> None:
    err = _Terminal()
    assert _cli("diagnose", str(log), "--rollouts", str(rollouts), "--lang", "zh", err=err)[0] == 0
    frames = _frames(err.getvalue())
    for shown in ("rolls 里的 rollout：读取 0/3 个文件", "rolls 里的 rollout：组指标（σ_G、pass@k） 0/24",
                  "rolls 里的 rollout：多样性 2/24", "rolls 里的 rollout：整表指标 24/24"):
        assert shown in frames, frames


def test_watch_once_shows_the_reading_of_its_rollouts_in_chinese(tmp_path: Path, log: Path, rollouts: Path) -> None:
    err = _Terminal()
    code, _, said = _cli("watch", str(log), "--once", "--rollouts", str(rollouts), "--state",
                         str(tmp_path / "s.sqlite"), "--lang", "zh", err=err)
    assert code in (0, 1) and said.startswith("\r\x1b[2Krolls 里的 rollout：读取 0/3 个文件"), said
