"""Under ``--lang zh`` the lines the subcommands write themselves are Chinese: the usage refusals of
``inspect``/``diagnose``/``explain``/``report``/``export``, what ``report``, ``export`` and ``sample`` say they
wrote, the series an export left out, the bars of ``report``, ``rollouts`` and ``sample``, and the line that
reports a bug of rlvitals. Each line is made for real by the command that says it, and the English run says
what it said before (other tests match it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from wandb_env import offline_wandb

import rlvitals.cli as cli
from rlvitals.synthetic.simulate import write_example

from .test_zh import english_prose
from .test_zh_messages import _cli, _Terminal

#: W&B's own noun, as the Chinese lines of watch --export-wandb write it too
W_AND_B = ("run",)


def _both(*argv: str) -> tuple[tuple[int, str, str], tuple[int, str, str]]:
    """The same command in English and in Chinese."""
    return _cli(*argv), _cli(*argv, "--lang", "zh")


def _frames(raw: str) -> list[str]:
    """What a terminal showed, one redraw a line: control sequences and the bar's glyphs left out."""
    text = re.sub("[━╸╺]+", " ", re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw))
    return [" ".join(line.split()) for line in re.split(r"[\r\n]", text) if line.strip()]


def _chinese(text: str, names: tuple[str, ...] = ()) -> None:
    left = english_prose(text, names)
    assert not left, "English left in the Chinese output:\n" + "\n".join(f"{w}: {line}" for line, w in left)


# --- usage refusals --------------------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "en", "zh"), [
    (["inspect"], "inspect needs at least one PATH (or --example)", "inspect 至少需要一个 PATH（或 --example）"),
    (["diagnose"], "diagnose needs at least one PATH (or --example)", "diagnose 至少需要一个 PATH（或 --example）"),
    (["explain"], "explain needs a metric KEY or --list", "explain 需要一个指标 KEY 或 --list"),
    (["diagnose", "run.log", "--verbose"],
     "diagnose --verbose lists the rollout metrics that could not be computed, but no --rollouts DIR was given; "
     "add --rollouts DIR (the rollout dumps of the run) or drop --verbose",
     "diagnose --verbose 列出无法计算的 rollout 指标，但没有给出 --rollouts DIR；请加上 --rollouts DIR"
     "（这次训练的 rollout 导出文件），或者去掉 --verbose"),
])
def test_a_command_without_what_it_needs_is_refused_in_chinese(argv: list[str], en: str, zh: str) -> None:
    english, chinese = _both(*argv)
    assert english == (2, "", f"rlvitals: {en}\n")
    assert chinese == (2, "", f"rlvitals：{zh}\n")
    _chinese(chinese[2], names=(argv[0],))  # the command's own name


def test_report_labels_that_do_not_match_the_runs_are_refused_in_chinese(tmp_path: Path, log: Path) -> None:
    english, chinese = _both("report", str(log), "-o", str(tmp_path / "r.html"), "--label", "a", "--label", "b")
    assert english == (2, "", "rlvitals: 1 run(s) were read but --label was given 2 time(s); give --label once per "
                              "run, in the order of the runs (a folder may hold several runs: rlvitals diagnose "
                              "lists them)\n")
    assert chinese == (2, "", "rlvitals：读到了 1 次训练，但 --label 给了 2 次；每次训练给一次 --label，"
                              "按训练的顺序给出（一个文件夹里可能有几次训练：rlvitals diagnose 会列出它们）\n")
    _chinese(chinese[2])
    assert not (tmp_path / "r.html").exists()


def test_one_wandb_run_id_for_several_runs_is_refused_in_chinese(tmp_path: Path, log: Path) -> None:
    english, chinese = _both("export", str(log), str(log), "--wandb", "--wandb-dir", str(tmp_path),
                             "--wandb-run-id", "q1wx369w")
    assert english == (2, "", "rlvitals: --wandb-run-id 'q1wx369w' names one W&B run, but 2 runs were given; "
                              "export one run at a time when resuming\n")
    assert chinese == (2, "", "rlvitals：--wandb-run-id 'q1wx369w' 指的是一个 W&B run，但给了 2 次训练；"
                              "续写已有的 run 时请一次导出一次训练\n")
    _chinese(chinese[2], names=W_AND_B)
    assert not (tmp_path / "wandb").exists()


def test_sample_arguments_are_refused_in_chinese_before_the_model_loads() -> None:
    english, chinese = _both("sample", "nowhere", "--samples", "0")
    assert english[0] == chinese[0] == 2
    assert "rlvitals: sampling: samples=0; expected at least 1 rollout per prompt" in english[2]
    assert chinese == (2, "", "rlvitals：采样：samples=0；每个 prompt 应至少 1 个 rollout\n")
    english, chinese = _both("sample", "nowhere", "--probe", "-1")
    assert english == (2, "", "rlvitals: --probe -1: expected 0 (no probe) or more rollouts to probe\n")
    assert chinese == (2, "", "rlvitals：--probe -1：应为 0（不探测）或要探测的 rollout 条数\n")
    assert not Path("nowhere").exists()


def test_a_bug_of_ours_is_reported_in_chinese(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that crashes (here ``formats``, made to divide by zero): the report's words are Chinese, the
    exception and the traceback are Python's own."""
    def crash(args: object, out: object, err: object) -> int:
        return 1 // 0

    monkeypatch.setitem(cli.COMMANDS, "formats", crash)
    english, chinese = _both("formats")
    assert english[0] == chinese[0] == cli.EXIT_INTERNAL
    assert english[2].startswith("rlvitals: internal error in 'formats': ZeroDivisionError: integer division or "
                                 "modulo by zero\nthis is a bug in rlvitals, not in your run; please report it with "
                                 "the command and the traceback below\nTraceback (most recent call last):\n")
    head, said, rest = chinese[2].partition("ZeroDivisionError: integer division or modulo by zero\n")
    assert head == "rlvitals：'formats' 命令内部出错：" and said
    assert rest.startswith("这是 rlvitals 自身的程序错误，不是你的训练的问题；请连同命令和下面的 traceback 一起报告\n"
                           "Traceback (most recent call last):\n")
    _chinese(head + "\n" + rest.splitlines()[0], names=("formats",))  # the command, quoted


# --- what was written ----------------------------------------------------------------------------

def test_report_says_what_it_wrote_and_shows_its_build_in_chinese(tmp_path: Path, log: Path,
                                                                  rollouts: Path) -> None:
    page = tmp_path / "r.html"
    code, out, _ = _cli("report", str(log), "--rollouts", str(rollouts), "-o", str(page))
    assert code == 0 and re.fullmatch(rf"wrote {re.escape(str(page))}: 1 run\(s\), \d+\.\d MB\n", out), out
    err = _Terminal()
    code, out, said = _cli("report", str(log), "--rollouts", str(rollouts), "-o", str(page), "--lang", "zh", err=err)
    assert code == 0 and re.fullmatch(rf"已写出 {re.escape(str(page))}：1 次训练，\d+\.\d MB\n", out), out
    _chinese(out)
    frames = _frames(said)
    for shown in ("rolls 里的 rollout：读取 0/3 个文件", "报告 r.html：诊断 0/1 次训练", "报告 r.html：写出页面"):
        assert shown in frames, frames
    assert not [f for f in frames if f.startswith("report ")], frames


def test_export_says_what_it_wrote_and_what_it_left_out_in_chinese(tmp_path: Path) -> None:
    """A run whose trainer logged a NaN grad norm at every step: the series has nothing to chart, and the
    export says so under the line of what it wrote."""
    console = write_example(tmp_path / "console")["console"]
    nan = tmp_path / "nan.log"
    nan.write_text(re.sub(r"actor/grad_norm:\S+", "actor/grad_norm:nan", console.read_text()))
    argv = ["export", str(nan), "--metrics", "actor/grad_norm,actor/entropy"]
    code, out, err = _cli(*argv, "--tensorboard", str(tmp_path / "en"))
    assert code == 0, err
    first, dropped = out.splitlines()
    assert re.fullmatch(rf"wrote {re.escape(str(tmp_path / 'en'))}/events\.out\.tfevents\.\S+: 1 series, 300 points; "
                        r"\d+ findings? \(.+\) and the status of \d+ passed checks, with their words; "
                        r"verdict (ok|note|warn|fail)", first), first
    assert dropped == "  rlvitals/actor/grad_norm: no finite value at any of its 300 steps; not written"
    code, out, err = _cli(*argv, "--tensorboard", str(tmp_path / "zh"), "--lang", "zh")
    assert code == 0, err
    first, dropped = out.splitlines()
    assert re.fullmatch(rf"已写出 {re.escape(str(tmp_path / 'zh'))}/events\.out\.tfevents\.\S+：1 条序列、300 个点；"
                        r"\d+ 项发现（.+）和 \d+ 项通过的检查的状态，附说明；结论为(正常|提示|警告|失败)", first), first
    assert dropped == "  rlvitals/actor/grad_norm：全部 300 步都没有有限值，没有写入"
    _chinese(out)


@pytest.mark.tracker
def test_an_offline_wandb_export_is_said_in_chinese(tmp_path: Path, log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wandb")
    offline_wandb(monkeypatch, tmp_path)
    code, out, err = _cli("export", str(log), "--wandb", "--wandb-dir", str(tmp_path), "--lang", "zh")
    assert code == 0, err
    found = re.fullmatch(r"已写出 (\S+)（W&B run (\w+)，离线）：\d+ 条序列、\d+ 个点；\d+ 项发现（.+）"
                         r"和 \d+ 项通过的检查的状态，附说明；结论为\w+\n", out)
    assert found and Path(found[1]).is_dir() and found[1].endswith(found[2]), out
    # the run id W&B drew is an identifier; one of letters alone (zmtvntgs), or the letters after a digit
    # (9vhwopfh), would read as an English word
    _chinese(out, names=(*W_AND_B, found[2], *re.findall(r"[A-Za-z]+", found[2])))


def test_rollouts_shows_its_analysis_in_chinese(rollouts: Path) -> None:
    err = _Terminal()
    code, out, _ = _cli("rollouts", str(rollouts), "--lang", "zh", err=err)
    frames = _frames(err.getvalue())
    assert code == 0 and out
    for shown in ("rolls 里的 rollout：读取 0/3 个文件", "rolls 里的 rollout：整表指标 24/24"):
        assert shown in frames, frames
    assert not [f for f in frames if f.startswith("rollouts in ")], frames


@pytest.mark.model
def test_sample_and_its_probe_say_what_they_wrote_in_chinese(tmp_path: Path) -> None:
    """The real small model, as small as it runs (one group of 2, six tokens, one rollout probed): the
    English of these lines is matched by tests/synthetic/test_sampler.py."""
    from rlvitals.synthetic.sampler import INSTALL, missing_packages

    if missing_packages():
        pytest.skip(f"the small model needs {missing_packages()}; install with: {INSTALL}")
    err = _Terminal()
    code, out, said = _cli("sample", str(tmp_path), "--steps", "1", "--prompts", "1", "--samples", "2",
                           "--max-new-tokens", "6", "--probe", "1", "--lang", "zh", err=err)
    assert code == 0, said
    sampled, verl, trl, probed = out.splitlines()
    assert re.fullmatch(r"从 SmolLM2-135M-Instruct 采样了 2 条 rollout"
                        r"（(从 float32 缓存加载|从 GGUF 反量化加载并写入缓存)，用时 \d+\.\d 秒）："
                        r"[012] 条正确（(0|50|100)%）", sampled), sampled
    assert verl == f"已写出 veRL rollout 导出：{tmp_path / 'verl'}（共 1 个训练步的文件）"
    assert trl == f"已写出 TRL 生成结果：{tmp_path / 'trl' / 'completions'}（共 1 个训练步的文件）"
    probes = tmp_path / "verl" / "rlvitals-probes.jsonl"
    assert re.fullmatch(r"用 \S+ 探测了 1 条 rollout：faithfulness (\d\.\d\d|未测出)（1 表示答案依赖推理过程）；"
                        rf"已写出 {re.escape(str(probes))}（rlvitals rollouts {re.escape(str(tmp_path / 'verl'))} "
                        r"会读取它）", probed), probed
    assert probes.is_file()
    _chinese(out)
    frames = _frames(said)
    assert f"采样 {tmp_path.name}：加载模型" in frames and any(f.startswith("探测：") for f in frames), frames
