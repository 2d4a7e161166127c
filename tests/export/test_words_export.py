"""With ``--lang zh`` the exports' errors and the series they leave out are said in Chinese: real failures of
the TensorBoard and W&B writers (a file where a folder belongs, a folder that cannot be made, a memo an
earlier watcher left broken, no wandb client) and of the plan (an unknown metric or language), through the
API and through ``rlvitals export`` / ``rlvitals watch``. The English is unchanged (the other tests match it).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

import rlvitals
from rlvitals.cli import main
from rlvitals.diagnosis import Diagnosis, diagnose
from rlvitals.errors import RlvitalsError, UnknownMetricError
from rlvitals.export import ExportPlan, LiveTensorBoard, LiveWandb, plan_export, write_tensorboard, write_wandb
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from rlvitals.words import in_lang

from export.test_tensorboard import FIXTURE, gappy  # isort: skip

EMPTY = ExportPlan("run.log", "zh", "ok", 5, (), ())


@pytest.fixture(scope="module")
def diagnosed() -> Diagnosis:
    run = rlvitals.load(FIXTURE)[0]
    return diagnose(run.with_series(gappy(run.train_steps.tolist()[::40])))


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out, err)
    return code, out.getvalue(), err.getvalue()


# --- plan ---------------------------------------------------------------------------------------

def test_an_unknown_metric_and_language_in_chinese(diagnosed: Diagnosis) -> None:
    with pytest.raises(UnknownMetricError) as caught:
        plan_export(diagnosed, metrics=["actor/entropyy"])
    assert caught.value.text("zh") == (f"--metrics 'actor/entropyy'：{diagnosed.run.path} 没有记录这个指标；"
                                       "它记录的相近的键：actor/entropy、actor/lr；运行 'rlvitals inspect RUN' 可以列出"
                                       "一次运行记录的全部规范键名")
    assert str(caught.value).startswith("--metrics 'actor/entropyy': ")  # the English stays as it was
    with pytest.raises(RlvitalsError) as caught:
        plan_export(diagnosed, lang="fr")
    assert caught.value.text("zh") == "导出语言 'fr'：应为 en、zh 之一"
    with pytest.raises(RlvitalsError) as caught:
        plan_export(diagnosed, derived=["pass@128"])
    assert caught.value.text("zh") == (f"派生序列 ['pass@128'] 不是 {diagnosed.run.path} 的列；先用 "
                                       "run.with_series(analysis.series()) 把它们并入，再诊断并入后的运行")


def test_a_series_left_out_says_why_in_both_languages(diagnosed: Diagnosis) -> None:
    plan = plan_export(diagnosed, derived=["pass@64", "maj@64"], lang="zh")
    (dropped,) = plan.dropped
    n = len(diagnosed.run.train_steps.tolist()[::40])
    assert dropped == f"rlvitals/pass@64: no finite value at any of its {n} steps; not written"
    assert in_lang(dropped, "zh") == f"rlvitals/pass@64：全部 {n} 步都没有有限值，没有写入"


def test_cli_export_an_unknown_metric_in_chinese(tmp_path: Path) -> None:
    code, out, err = _cli(["export", str(FIXTURE), "--tensorboard", str(tmp_path / "tb"), "--metrics",
                           "nope/metric", "--lang", "zh"])
    assert code == 2 and not out
    assert err.startswith("rlvitals：--metrics 'nope/metric'：") and err.endswith(
        " 没有记录这个指标；运行 'rlvitals inspect RUN' 可以列出一次运行记录的全部规范键名\n")


# --- TensorBoard --------------------------------------------------------------------------------

def test_tensorboard_folder_errors_in_chinese(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(RlvitalsError) as caught:
        write_tensorboard(EMPTY, tmp_path / "file" / "sub")
    said = caught.value.text("zh")
    assert said.startswith(f"--tensorboard {tmp_path / 'file' / 'sub'}：无法创建这个文件夹（")
    assert said.endswith("）；请给出一个可写的文件夹")
    code, out, err = _cli(["export", str(FIXTURE), "--tensorboard", str(tmp_path / "file"), "--lang", "zh"])
    assert code == 2 and not out
    assert err == (f"rlvitals：--tensorboard {tmp_path / 'file'}：这是一个文件，应为文件夹（这次运行的 TensorBoard "
                   "日志文件夹，或一个新文件夹）；请给出存放 events.out.tfevents.* 文件的文件夹\n")


def test_a_live_event_file_that_cannot_be_written_in_chinese(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    live = LiveTensorBoard(tmp_path / "file" / "tb", clock=lambda: 1000.0, host="h")
    with pytest.raises(RlvitalsError, match=r"cannot write .*; the derived series and findings are not exported"
                                            r" until it can") as caught:
        live.update(EMPTY)
    said = caught.value.text("zh")
    assert said.startswith(f"--export-tensorboard {tmp_path / 'file' / 'tb'}：无法写入（")
    assert said.endswith("）；在能写入之前，派生序列和各项发现都不会导出")


# --- W&B ----------------------------------------------------------------------------------------

def test_a_broken_memo_of_an_earlier_watcher_in_chinese(tmp_path: Path) -> None:
    (tmp_path / "rlvitals-live.json").write_text("{not json")
    with pytest.raises(RlvitalsError, match=r"cannot read what an earlier watcher wrote .*; move it away to start "
                                            r"new W&B runs") as caught:
        LiveWandb(tmp_path, key="run.jsonl")
    said = caught.value.text("zh")
    assert said.startswith(f"--export-wandb {tmp_path / 'rlvitals-live.json'}：无法读取先前的 watcher 写下的记录（")
    assert said.endswith("）；把它移走即可开始新的 W&B run")


def test_without_wandb_in_chinese(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # what `import wandb` does when it is not installed
    with pytest.raises(RlvitalsError) as caught:
        write_wandb(EMPTY, directory=tmp_path)
    said = "--wandb 需要 wandb 客户端，但它没有安装；请用 pip install 'rlvitals[export]' 安装"
    assert caught.value.text("zh") == said
    code, out, err = _cli(["export", str(FIXTURE), "--wandb", "--wandb-dir", str(tmp_path), "--lang", "zh"])
    assert code == 2 and not out
    assert err == f"rlvitals：{said}\n"


def test_cli_watch_export_wandb_to_a_file_in_chinese(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"".join(line + b"\n" for line in jsonl_lines(Scenario(steps=10))))
    code, _, err = _cli(["watch", str(log), "--once", "--state", str(tmp_path / "s.sqlite"), "--export-wandb",
                         str(log), "--lang", "zh"])
    assert code == 2
    assert err == f"rlvitals：--export-wandb {log}：这是一个文件，应为文件夹（用来存放 W&B run 的文件）\n"


@pytest.mark.tracker
def test_the_w_and_b_summary_names_the_series_left_out_in_the_plans_language(
        diagnosed: Diagnosis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wandb = pytest.importorskip("wandb")
    from wandb_env import offline_wandb  # isort: skip

    offline_wandb(monkeypatch, tmp_path)
    plan = plan_export(diagnosed, derived=["pass@64", "maj@64"], lang="zh")
    done = write_wandb(plan, directory=tmp_path / "w", project="t")
    wandb.teardown()  # finish() returns before wandb's service has flushed the run file
    (back,) = rlvitals.load(done.run_dir)
    assert back.summary["rlvitals/dropped"] == in_lang(plan.dropped[0], "zh") != plan.dropped[0]
