"""``serve FOLDER`` and ``diagnose FOLDER`` on a real TRL ``output_dir`` that reported to every tracker
(``tests/fixtures/trl-output-dir-trackers``): one run, its ``completions/`` joined, the trackers' copies
named; and runs whose logs have one name (``train.log`` in ``exp1/`` and ``exp2/``) told apart by their
folders in serve's list, diagnose's output and the report."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from rlvitals.cli import main
from rlvitals.rollout import dump_folders, pair
from rlvitals.server.discover import Discovery

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ingest"))
from serving import served  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "trl-output-dir-trackers"
CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"
TWINS = ("also logged to TensorBoard (runs/Dec07_13-08-29_vm), Trackio (trackio/rlvitals-trackers.db#grpo-trackers), "
         "W&B (wandb/offline-run-20261207_130829-vdas9cxw), MLflow (mlflow.db#63e1dc19e2bc4cfcb4951286df402b1c), the "
         "console (train.log)")


@pytest.fixture
def experiments(tmp_path: Path) -> Path:
    """A folder of two experiments, each the real output_dir: ``runs/exp1/out`` and ``runs/exp2/out``."""
    runs = tmp_path / "runs"
    for name in ("exp1", "exp2"):
        shutil.copytree(FIXTURE, runs / name / "out")
    return runs


def _diagnose(*args: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["diagnose", *args, "--json"], out=out, err=err)
    return code, json.loads(out.getvalue()), err.getvalue()


def test_discovery_finds_one_run_and_its_completions(tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(FIXTURE, out)
    found = Discovery(None).scan(out)
    assert found.logs == [out] and found.formats[out] == "trl-state"
    assert list(found.rollouts) == [out / "completions"] and len(found.rollouts[out / "completions"]) == 8
    # diagnose FOLDER's pairing, by the same rule
    assert pair(dump_folders(out), [out], {out: "trl-state"}).pairs == {out: out / "completions"}


def test_serve_lists_the_output_dir_as_one_run_with_its_rollouts(tmp_path: Path) -> None:
    runs, notes = served(FIXTURE, tmp_path)
    assert [(r["label"], r["status"], r["steps"], r["framework"]) for r in runs] == [
        ("trl-output-dir-trackers", "ready", 8, "trl")], notes
    assert f"serve: in {FIXTURE}: 1 rollout folder paired with its log" in notes
    assert not [n for n in notes if "holds" in n], notes  # no "holds 2 runs": the rollouts are joined


def test_serve_joins_the_rollouts_and_names_the_copies_on_the_run_page(tmp_path: Path) -> None:
    from rlvitals.server.store import ServeState
    from rlvitals.server.workspace import Workspace

    now = [1000.0]

    def clock() -> float:
        now[0] += 60.0
        return now[0]

    ws = Workspace([FIXTURE], ServeState(tmp_path / "serve.sqlite"), clock=clock)
    try:
        ws.poll_once()
        ws.poll_once()
        [s] = [ws.get(r["id"]) for r in ws.summaries()]
        assert s.rollouts is not None and s.run is not None
        assert f"rollouts in {FIXTURE / 'completions'}" in " ".join(str(n) for n in s.run.notes)
        assert any(n == f"{FIXTURE}: {TWINS}: the same steps and values, so one run, read from its trl-state log"
                   for n in s.run.notes)
        page = ws.page(s)
        [run] = page["runs"]
        assert any(TWINS in n for n in run["notes"]) and any("MLflow（mlflow.db#" in n for n in run["notes_zh"])
    finally:
        ws.close()


def test_diagnose_folder_is_one_run_with_its_completions_and_names_the_copies() -> None:
    code, doc, err = _diagnose(str(FIXTURE))
    assert code == 0
    [run] = doc["runs"]
    assert run["path"] == str(FIXTURE) and run["steps"] == 8
    assert run["rollouts"]["path"] == str(FIXTURE / "completions")
    assert f"{FIXTURE}: {TWINS}" in err


def test_diagnose_folder_says_in_chinese_where_else_the_run_was_logged() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["diagnose", str(FIXTURE), "--brief", "--lang", "zh"], out=out, err=err) == 0
    assert "同一训练也记录在 TensorBoard（runs/Dec07_13-08-29_vm）、Trackio（" in err.getvalue()
    assert "、控制台（train.log）：" in err.getvalue()


def test_two_output_dirs_are_two_runs_named_by_their_folders(experiments: Path, tmp_path: Path) -> None:
    runs, notes = served(experiments, tmp_path, sort="name")
    assert [(r["label"], r["steps"]) for r in runs] == [("exp1/out", 8), ("exp2/out", 8)], notes
    assert f"serve: in {experiments}: 2 rollout folders paired with their logs" in notes
    code, doc, _ = _diagnose(str(experiments))
    assert code == 0
    assert [(r["path"], r["rollouts"]["path"]) for r in doc["runs"]] == [
        (str(experiments / e / "out"), str(experiments / e / "out" / "completions")) for e in ("exp1", "exp2")]


def test_two_train_logs_are_named_by_their_folders_everywhere(tmp_path: Path) -> None:
    """The same file name in two experiments: exp1/train.log and exp2/train.log in serve's list, in
    diagnose FOLDER's table and blocks, and in the report's run list."""
    folder = tmp_path / "runs"
    for exp, run in (("exp1", "trlconsole__hotpotqa_qwen25_3b_grpo_v3"),
                     ("exp2", "trlconsole__hotpotqa_qwen25_3b_grpo_klrunaway")):
        (folder / exp).mkdir(parents=True)
        [log] = (CORPUS / run).glob("*.log")
        shutil.copyfile(log, folder / exp / "train.log")
    listed, notes = served(folder, tmp_path, sort="name")
    assert [r["label"] for r in listed] == ["exp1/train.log", "exp2/train.log"], notes
    out, err = io.StringIO(), io.StringIO()
    assert main(["diagnose", str(folder), "--brief"], out=out, err=err) in (0, 1)
    said = out.getvalue()
    assert "exp1/train.log" in said and "exp2/train.log" in said
    report = tmp_path / "report.html"
    assert main(["report", str(folder), "-o", str(report)], out=io.StringIO(), err=io.StringIO()) == 0
    html = report.read_text(encoding="utf-8")
    assert '"label":"exp1/train.log"' in html and '"label":"exp2/train.log"' in html
    assert '"label":"train.log"' not in html


def test_diagnose_an_output_dir_before_its_first_checkpoint(tmp_path: Path) -> None:
    """No trainer_state.json yet (the output_dir of a training still in its first steps): a tracker's copy (full
    precision) is kept, the other copies and the console are its twins, completions/ its rollouts — one run, not
    five, and the completions are not taken for metrics logs that fail the whole folder."""
    out = tmp_path / "out"
    shutil.copytree(FIXTURE, out, ignore=shutil.ignore_patterns("checkpoint-*"))
    code, doc, err = _diagnose(str(out))
    assert code == 0, err
    [run] = doc["runs"]
    # the first copy found is kept; the run stands under the folder's path, as it will after the first checkpoint
    assert (run["path"], run["steps"]) == (str(out), 8) and f"{out / 'mlflow.db'}#" in err
    assert run["rollouts"]["path"] == str(out / "completions")
    assert ": also logged to " in err and "the console (train.log)" in err and "W&B (wandb/offline-run-" in err


def test_diagnose_says_which_copy_stops_earlier(tmp_path: Path) -> None:
    """A copy read with the training because it agrees on the steps it holds (the MLflow store cut to step 5) is
    named on stderr with where it stops, beside the twins: no copy of the training is left out unsaid."""
    from trl_output_dir import sql

    out = tmp_path / "out"
    shutil.copytree(FIXTURE, out)
    sql(out / "mlflow.db", "DELETE FROM metrics WHERE step > 5")
    code, doc, err = _diagnose(str(out))
    assert code in (0, 1), err
    assert [(run["path"], run["steps"]) for run in doc["runs"]] == [(str(out), 8)]
    lines = err.splitlines()
    assert any(line.startswith(f"rlvitals: {out}: also logged to ") for line in lines), err
    assert f"rlvitals: {out}: mlflow.db#63e1dc19e2bc4cfcb4951286df402b1c (to step 5) agrees with trl-state on every " \
        "step they share" in err


def test_two_unreadable_logs_of_one_name_are_named_by_their_folders(tmp_path: Path) -> None:
    """A log serve cannot read is listed with its error, and named apart as the runs are: a Trainer's state saved
    as state.json and cut short, in exp1/ and exp2/, is exp1/state.json and exp2/state.json."""
    folder = tmp_path / "runs"
    state = (FIXTURE / "checkpoint-8" / "trainer_state.json").read_bytes()
    for exp in ("exp1", "exp2"):
        (folder / exp).mkdir(parents=True)
        (folder / exp / "state.json").write_bytes(state[: len(state) // 2])  # cut short: not JSON
    listed, notes = served(folder, tmp_path, sort="name")
    assert [(r["label"], r["status"]) for r in listed] == [("exp1/state.json", "unreadable"),
                                                          ("exp2/state.json", "unreadable")], notes
