"""Exports carry the run: by default ``rlvitals export`` writes every canonical metric a real run logged (under
``rlvitals/<canonical key>``) beside its findings, ``--metrics`` narrows the curves, ``--findings-only`` writes
none; and the line it prints counts what it wrote, each number checked against the written files read back
(TensorBoard's EventAccumulator; rlvitals' readers of the W&B offline run and the SwanLab files; Trackio's
SQLite), its findings counted as ``rlvitals diagnose`` counts them (fail, warn, note), the passed checks apart.

The run: a real TRL GRPO console log of the corpus (93 steps, nine metrics; diagnose: 2 failures, 1 warning,
13 passed checks), and a real TensorBoard folder of the corpus (TRL, five keys the catalog does not know).
"""

from __future__ import annotations

import io
import re
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import ROOT
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import rlvitals
from rlvitals.cli import main
from rlvitals.diagnosis import diagnose
from rlvitals.export import plan_export, tally
from rlvitals.export.live import LiveTensorBoard
from rlvitals.export.tensorboard import TEXT_TAG, VERDICT_TAG

CORPUS = ROOT / "benchmarks" / "corpus" / "runs"
LOG = CORPUS / "trlconsole__hotpotqa_qwen25_3b_grpo_klrunaway" / "grpo.log"
TB_RUNS = CORPUS / "tb__fine-tune-experiments__qwen2-0.5b-grpo-numinamath" / "runs"
FINDINGS = "rlvitals/findings/"
#: a status as the exports chart it (docs/json.md), read back
STATUS_OF = {0.0: "ok", 0.5: "note", 1.0: "warn", 2.0: "fail"}
#: the line an export prints, in English
SAID = re.compile(r"wrote (?P<where>.+?): (?P<series>\d+) series(?: \((?P<derived>\d+) from the rollouts\))?"
                  r"(?P<only> \(--findings-only\))?, (?P<points>[\d,]+) points; (?P<findings>\d+) findings?"
                  r"(?: \((?P<kinds>[^)]*)\))?(?: and the status of (?P<passed>\d+) passed checks?)?"
                  r"(?P<words>, with their words)?; verdict (?P<verdict>\w+)")
SAID_ZH = re.compile(r"已写出 (?P<where>.+?)：(?P<series>\d+) 条序列(?:（其中 (?P<derived>\d+) 条来自 rollout）)?"
                     r"(?P<only>（--findings-only）)?、"
                     r"(?P<points>\d+) 个点；(?P<findings>\d+) 项发现(?:（(?P<kinds>[^）]*)）)?"
                     r"(?:和 (?P<passed>\d+) 项通过的检查的状态)?"
                     r"(?:，附说明)?；结论为(?P<verdict>\S+)")


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def said(text: str) -> dict[str, int | str | None]:
    """The numbers of the line an export printed (the first line of ``text``)."""
    found = SAID.fullmatch(text.splitlines()[0])
    assert found, text
    return {**found.groupdict(), "series": int(found["series"]), "points": int(found["points"].replace(",", "")),
            "findings": int(found["findings"]), "passed": int(found["passed"] or 0)}


def diagnosed_counts(log: Path, lang: str = "en") -> str:
    """The line of ``rlvitals diagnose`` that counts the findings (``2 failures · 1 warning``)."""
    code, out, err = _cli("diagnose", str(log), "--lang", lang)
    assert code in (0, 1), err
    (line,) = [line.strip() for line in out.splitlines()
               if re.fullmatch(r"\s*\d+ (failures?|warnings?|notes?|项失败|项警告|项提示)( · .*)?", line)]
    return line


def f32(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float32).astype(np.float64)


def tensorboard_written(folder: Path) -> tuple[dict[str, list[tuple[int, float]]], Counter[str], EventAccumulator]:
    """What the event files of ``folder`` hold under rlvitals/: the series' points, the finding statuses."""
    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    tags = [t for t in acc.Tags()["scalars"] if t.startswith("rlvitals/")]
    series = {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in tags if not t.startswith(FINDINGS)
              and t != VERDICT_TAG}
    statuses = Counter(STATUS_OF[e.value] for t in tags if t.startswith(FINDINGS) for e in acc.Scalars(t))
    return series, statuses, acc


def check_counts(line: dict[str, int | str | None], series: dict[str, list[tuple[int, float]]],
                 statuses: Counter[str]) -> None:
    """The printed line says exactly what the files hold."""
    assert line["series"] == len(series)
    assert line["points"] == sum(len(points) for points in series.values())
    assert line["findings"] == statuses["fail"] + statuses["warn"] + statuses["note"]
    assert line["passed"] == statuses["ok"]


# --- TensorBoard: the project's own writer, read back by TensorBoard's ---------------------------------------

def test_by_default_every_logged_metric_goes_with_the_findings_as_diagnose_counts_them(tmp_path: Path) -> None:
    code, out, err = _cli("export", str(LOG), "--tensorboard", str(tmp_path / "tb"))
    assert code == 0 and not err, err
    line = said(out)
    series, statuses, acc = tensorboard_written(tmp_path / "tb")
    check_counts(line, series, statuses)
    run = rlvitals.load(LOG)[0]
    assert len(run.metrics) == 9 and set(series) == {f"rlvitals/{k}" for k in run.metrics}  # the canonical names
    for key in run.metrics:
        steps, values = run.series(key, train_only=False)
        got = series[f"rlvitals/{key}"]
        assert [s for s, _ in got] == steps.tolist() and np.array_equal([v for _, v in got], f32(values)), key
    # what diagnose shows: 2 failures and 1 warning, not the 16 records that include the passed checks
    assert line["kinds"] == diagnosed_counts(LOG) == "2 failures · 1 warning"
    assert (line["findings"], line["passed"], line["verdict"]) == (3, 13, "fail") and line["words"]
    assert len([f for f in diagnose(run).findings if f.status != "skipped"]) == 16
    assert [e.value for e in acc.Scalars(VERDICT_TAG)] == [2.0] and acc.Tensors(TEXT_TAG)


def test_metrics_narrows_the_curves_to_those_named_as_the_run_logged_them(tmp_path: Path) -> None:
    # "kl" is the key TRL logged: the run reads it as actor/kl_loss
    code, out, err = _cli("export", str(LOG), "--tensorboard", str(tmp_path), "--metrics", "kl,response_length/mean")
    assert code == 0, err
    series, statuses, _ = tensorboard_written(tmp_path)
    assert set(series) == {"rlvitals/actor/kl_loss", "rlvitals/response_length/mean"}
    check_counts(said(out), series, statuses)
    assert said(out)["series"] == 2 and said(out)["points"] == 2 * 93


def test_findings_only_writes_no_curve(tmp_path: Path) -> None:
    code, out, err = _cli("export", str(LOG), "--tensorboard", str(tmp_path), "--findings-only")
    assert code == 0, err
    series, statuses, acc = tensorboard_written(tmp_path)
    assert series == {} and statuses == Counter({"ok": 13, "fail": 2, "warn": 1})
    line = said(out)
    assert line["only"] and (line["series"], line["points"], line["findings"], line["passed"]) == (0, 0, 3, 13)
    check_counts(line, series, statuses)
    markdown = acc.Tensors(TEXT_TAG)[0].tensor_proto.string_val[0].decode()
    assert markdown.startswith("**rlvitals verdict: fail**")


def test_the_line_in_chinese_counts_the_same(tmp_path: Path) -> None:
    code, out, err = _cli("export", str(LOG), "--tensorboard", str(tmp_path), "--lang", "zh")
    assert code == 0, err
    found = SAID_ZH.fullmatch(out.splitlines()[0])
    assert found, out
    series, statuses, _ = tensorboard_written(tmp_path)
    assert (int(found["series"]), int(found["points"]), int(found["findings"]), int(found["passed"])) == (
        len(series), sum(map(len, series.values())), 3, statuses["ok"])
    assert found["kinds"] == diagnosed_counts(LOG, "zh") == "2 项失败 · 1 项警告" and found["verdict"] == "失败"


@pytest.mark.parametrize(("flags", "en", "zh"), [
    (["--metrics", " , "], "--metrics ' , ' names no metric; give keys or aliases separated by commas ('rlvitals "
     "inspect RUN' lists them), leave it out to write every metric the run logged, or give --findings-only to "
     "write no curve",
     "--metrics ' , ' 没有指定任何指标；请给出用逗号分隔的键名或别名（'rlvitals inspect RUN' 会列出它们），"
     "不加它则写出这次运行记录的全部指标，加 --findings-only 则不写曲线"),
    (["--metrics", "kl", "--findings-only"],
     "--findings-only writes no curve, but --metrics names some to write; drop one of the two",
     "--findings-only 不写任何曲线，但 --metrics 指定了要写的曲线；请去掉其中一个"),
])
def test_curves_asked_for_and_refused_at_once_in_both_languages(tmp_path: Path, flags: list[str], en: str,
                                                                zh: str) -> None:
    argv = ["export", str(LOG), "--tensorboard", str(tmp_path / "tb"), *flags]
    assert _cli(*argv) == (2, "", f"rlvitals: {en}\n")
    assert _cli(*argv, "--lang", "zh") == (2, "", f"rlvitals：{zh}\n")
    assert not (tmp_path / "tb").exists()


def test_into_the_runs_own_tensorboard_folder_nothing_comes_back_as_a_metric(tmp_path: Path) -> None:
    """Exported into the folder it was read from, the run reads back as the same run (the rlvitals/ tags are
    no catalog metric), and exported again it writes the same curves, not rlvitals/rlvitals/ ones."""
    shutil.copytree(TB_RUNS, tmp_path / "runs")
    (own,) = (tmp_path / "runs").iterdir()
    before = rlvitals.load(own)[0]
    code, out, err = _cli("export", str(own), "--tensorboard", str(own))
    assert code == 0, err
    first, unmapped = out.splitlines()
    assert unmapped == ("  5 logged key(s) not in the catalog, not written: train/total_flos, train/train_loss, "
                        "train/train_runtime, train/train_samples_per_second, train/train_steps_per_second "
                        "('rlvitals inspect RUN' lists them)")
    series, statuses, _ = tensorboard_written(own)
    check_counts(said(first), series, statuses)
    assert set(series) == {f"rlvitals/{k}" for k in before.metrics} and len(series) == 12
    after = rlvitals.load(own)[0]
    assert after.metrics == before.metrics and after.frame.equals(before.frame)
    code, out, err = _cli("export", str(own), "--tensorboard", str(tmp_path / "again"))
    assert code == 0, err
    again, _, _ = tensorboard_written(tmp_path / "again")
    assert set(again) == set(series) and said(out)["series"] == 12


def test_the_keys_left_out_are_named_in_chinese(tmp_path: Path) -> None:
    code, out, err = _cli("export", str(TB_RUNS), "--tensorboard", str(tmp_path), "--lang", "zh")
    assert code == 0, err
    first, unmapped = out.splitlines()
    assert SAID_ZH.fullmatch(first) and int(SAID_ZH.fullmatch(first)["series"]) == 12  # type: ignore[index]
    assert unmapped == ("  有 5 个记录的键不在指标目录中，没有写入：train/total_flos、train/train_loss、"
                        "train/train_runtime、train/train_samples_per_second、train/train_steps_per_second"
                        "（'rlvitals inspect RUN' 会列出它们）")


def test_the_plan_by_default_narrowed_and_empty_and_its_tally() -> None:
    d = diagnose(rlvitals.load(TB_RUNS)[0])
    every = plan_export(d)
    assert [s.key for s in every.series] == d.run.metrics and {s.origin for s in every.series} == {"logged"}
    assert every.unmapped == tuple(d.run.unmapped) and len(every.unmapped) == 5
    narrowed = plan_export(d, metrics=["grad_norm"])  # TRL's own key
    assert [s.tag for s in narrowed.series] == ["rlvitals/actor/grad_norm"] and narrowed.unmapped == ()
    none = plan_export(d, metrics=())
    assert none.series == () and none.findings == every.findings
    counted = tally(every)
    assert counted.series == counted.logged == 12 and counted.derived == 0
    assert counted.points == sum(len(s.steps) for s in every.series)
    assert counted.passed == sum(f.status == "ok" for f in every.findings) and counted.findings == sum(
        f.status in ("fail", "warn", "note") for f in every.findings)
    # a tracker run that held the steps up to 60 already: only the later points and statuses are new
    later = tally(every, after=60)
    assert later.points == sum(int((s.steps > 60).sum()) for s in every.series) < counted.points
    assert sum(later.statuses.values()) == sum(f.step > 60 for f in every.findings)


def test_the_live_exporter_carries_the_run_too(tmp_path: Path) -> None:
    """``watch --export-tensorboard`` shares the plan: its live file holds the logged curves as well."""
    d = diagnose(rlvitals.load(LOG)[0])
    plan = plan_export(d)
    live = LiveTensorBoard(tmp_path, clock=lambda: 5.0, host="h")
    written = live.update(plan)
    series, statuses, acc = tensorboard_written(tmp_path)
    assert set(series) == {f"rlvitals/{k}" for k in d.run.metrics}
    # every point, each finding's status and the verdict at the last step, and the findings' words
    assert written == sum(map(len, series.values())) + sum(statuses.values()) + 2
    assert statuses == Counter({"ok": 13, "fail": 2, "warn": 1}) and len(acc.Tensors(TEXT_TAG)) == 1
    assert live.update(plan) == 0  # nothing twice


# --- the trackers, through their real SDKs -------------------------------------------------------------------

@pytest.mark.tracker
def test_wandb_offline_holds_what_the_line_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wandb = pytest.importorskip("wandb")
    from wandb_env import offline_wandb

    offline_wandb(monkeypatch, tmp_path)
    code, out, err = _cli("export", str(LOG), "--wandb", "--wandb-dir", str(tmp_path / "w"))
    wandb.teardown()  # what the end of the rlvitals process does: the run file is complete
    assert code == 0, err
    (run_dir,) = (tmp_path / "w" / "wandb").glob("offline-run-*")
    (back,) = rlvitals.load(run_dir)
    raw = back.raw
    keys = [k for k in raw.columns if k.startswith("rlvitals/") and k != "rlvitals/step"]
    series = {k: raw.select("step", k).drop_nulls().rows() for k in keys if not k.startswith(FINDINGS)}
    statuses = Counter(STATUS_OF[v] for k in keys if k.startswith(FINDINGS)
                       for v in raw[k].drop_nulls().to_list())
    line = said(out)
    check_counts(line, series, statuses)
    assert set(series) == {f"rlvitals/{k}" for k in rlvitals.load(LOG)[0].metrics}
    assert line["kinds"] == "2 failures · 1 warning" and back.summary["rlvitals/verdict"] == "fail"


def _export(log: Path, *flags: str) -> str:
    """The command as a user runs it (trackio settles its folder when it is imported: a process of its own)."""
    done = subprocess.run([sys.executable, "-m", "rlvitals", "export", str(log), *flags], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _trackio_rows(db: Path) -> list[tuple[int, dict[str, float]]]:
    return [(step, orjson.loads(blob)) for step, blob in
            sqlite3.connect(db).execute("SELECT step, metrics FROM metrics ORDER BY id")]


def _trackio_counts(rows: list[tuple[int, dict[str, float]]]) -> tuple[dict[str, list[int]], Counter[str]]:
    series: dict[str, list[int]] = {}
    statuses: Counter[str] = Counter()
    for step, metrics in rows:
        for key, value in metrics.items():
            if key.startswith(FINDINGS):
                statuses[STATUS_OF[value]] += 1
            elif key.startswith("rlvitals/") and key not in ("rlvitals/step", "rlvitals/findings"):
                series.setdefault(key, []).append(step)
    return series, statuses


@pytest.mark.tracker
@pytest.mark.process
def test_trackio_sqlite_holds_what_the_line_says_and_a_grown_log_only_its_new_steps(tmp_path: Path) -> None:
    pytest.importorskip("trackio")
    log = tmp_path / LOG.name
    lines = LOG.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[: len(lines) // 2]))
    folder = tmp_path / "trackio"
    db = folder / "rlvitals.db"
    first = said(_export(log, "--trackio", str(folder)))
    rows = _trackio_rows(db)
    series, statuses = _trackio_counts(rows)
    check_counts(first, series, statuses)
    assert first["series"] == 9 and first["points"] > 0
    log.write_bytes(LOG.read_bytes())  # the log grew: only the new steps are logged, and counted
    second = said(_export(log, "--trackio", str(folder)))
    new = _trackio_rows(db)[len(rows):]
    assert new and min(step for step, _ in new) > max(step for step, _ in rows)
    check_counts(second, *_trackio_counts(new))
    run = rlvitals.load(LOG)[0]
    assert second["points"] + first["points"] == sum(len(run.series(k, train_only=False)[0]) for k in run.metrics)
    third = _export(log, "--trackio", str(folder))  # nothing new: nothing written, and it says so
    assert " 0 new rows" in third and said(third)["series"] == said(third)["points"] == 0
    assert len(_trackio_rows(db)) == len(rows) + len(new)


@pytest.mark.tracker
@pytest.mark.process
def test_swanlab_files_hold_what_the_line_says(tmp_path: Path) -> None:
    pytest.importorskip("swanlab")
    out = _export(LOG, "--swanlab", str(tmp_path / "swanlog"))
    (session,) = (tmp_path / "swanlog").glob("run-*")
    (back,) = rlvitals.load(session)
    raw = back.raw
    keys = [k for k in raw.columns if k.startswith("rlvitals/") and k != "rlvitals/step"]
    series = {k: raw.select("step", k).drop_nulls().rows() for k in keys if not k.startswith(FINDINGS)}
    statuses = Counter(STATUS_OF[v] for k in keys if k.startswith(FINDINGS) for v in raw[k].drop_nulls().to_list())
    line = said(out)
    check_counts(line, series, statuses)
    assert line["series"] == 9 and line["kinds"] == "2 failures · 1 warning" and line["passed"] == 13
