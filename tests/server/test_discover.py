"""What ``serve`` lists: runs, not files (:mod:`rlvitals.server.discover`). Over files real writers
wrote — the demo trainer's veRL log and rollout dumps, ``rlvitals watch``'s alerts and state, TRL
completions, real logs copied from the fixtures — a served folder shows exactly its runs, pairs the
rollout folders found beside them, says what it passed over, and lists the runs by last write or by
name in natural order (mtimes set with os.utime)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import REAL
from fastapi.testclient import TestClient
from report.test_model import QWEN, write_dump

from rlvitals.cli import main
from rlvitals.rollout.readers import dump_files
from rlvitals.rollout.writers import write_trl_completions
from rlvitals.server import ServerThread, create_app, run_id
from rlvitals.server.discover import Discovery, Found, pair, passed_line
from rlvitals.synthetic.demo import run_demo
from rlvitals.synthetic.simulate import Scenario, jsonl_lines
from server.test_app import workspace

TRL_STATE = "trl__UnslothGRPO__checkpoint-250_trainer_state.json"
LOCAL = "http://127.0.0.1"




def _completions(output_dir: Path, steps: int = 3) -> None:
    records = [{"prompt": f"What is {g}+{g}?", "response": str(2 * g + s % 2), "score": float(s % 2 == 0)}
               for g in range(2) for s in range(4)]
    for step in range(1, steps + 1):
        write_trl_completions(records, output_dir, step)


def _log(path: Path, steps: int = 30) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line + b"\n" for line in list(jsonl_lines(Scenario(steps=steps)))))


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 - a loopback server of this test
        body = r.read().decode("utf-8")
    return json.loads(body) if r.headers["content-type"] == "application/json" else body


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A veRL run's folder as the demo trainer and ``rlvitals watch`` leave it: the log in
    ``rlvitals_demo/`` (veRL's ``<project>/<experiment>.jsonl``), ``rollout_data/`` beside it, the
    watch's ``alerts.jsonl`` and ``.rlvitals/`` — and a TRL ``completions/`` folder and a README."""
    folder = tmp_path_factory.mktemp("demo")
    files = run_demo(folder, steps=40)
    code = main(["watch", str(files.log), "--rollouts", str(files.rollouts), "--once", "--alert",
                 f"jsonl:{folder / 'alerts.jsonl'}"], out=io.StringIO(), err=io.StringIO())
    assert code == 0 and (folder / "alerts.jsonl").stat().st_size > 0
    assert (files.log.parent / ".rlvitals" / "watch.sqlite").is_file()
    _completions(folder)
    (folder / "README.md").write_text("# arithmetic demo\n", encoding="utf-8")
    return folder, files.log


def test_a_run_folder_lists_its_run_not_its_files_and_pairs_its_rollouts(demo: tuple[Path, Path],
                                                                          tmp_path: Path) -> None:
    folder, log = demo
    ws = workspace([folder], tmp_path / "s.sqlite")
    ws.poll_once()
    try:
        with ServerThread(ws, "127.0.0.1") as srv:
            listed = _get(srv.url + "api/runs")
            assert [r["path"] for r in listed["runs"]] == [str(log)]  # no dump, alert, state or README
            assert listed["messages"][0] == (
                f"serve: in {folder}: 1 rollout folder paired with its log, 1 rollout folder not paired, "
                "2 rlvitals files skipped, 1 other file is not a log")
            rid = run_id(str(log))
            rollouts = _get(srv.url + f"api/runs/{rid}/rollouts")
            assert rollouts["available"] == list(range(1, 41))  # rollout_data/, not the TRL completions
            assert "pass@1" in _get(srv.url + f"api/runs/{rid}")["metrics"]
            page = _get(srv.url + f"runs/{rid}")
            assert 'id="rollouts"' in page
            index = _get(srv.url)
            assert "1 rollout folder paired with its log" in index and index.count('<tr data-run="') == 1
    finally:
        ws.close()


def test_a_given_rollouts_folder_wins_over_one_found_beside_the_log(demo: tuple[Path, Path], tmp_path: Path) -> None:
    folder, log = demo
    write_dump(tmp_path / "given", steps=12)
    ws = workspace([folder], tmp_path / "s.sqlite", rollouts=tmp_path / "given")
    ws.poll_once()
    c = TestClient(create_app(ws), base_url=LOCAL)
    rid = run_id(str(log))
    assert c.get(f"/api/runs/{rid}/rollouts").json()["available"] == list(range(1, 13))
    assert ws.notes()[0] == (f"serve: in {folder}: 2 rollout folders not paired, 2 rlvitals files skipped, "
                             "1 other file is not a log")
    ws.close()


def test_logs_beside_their_dumps_and_a_trl_output_dir_are_each_paired(tmp_path: Path) -> None:
    """A real veRL console log with its rollout dumps beside it, and a TRL output_dir (the real
    trainer_state.json in checkpoint-250/) holding completions/: two runs, each with its rollouts."""
    runs = tmp_path / "runs"
    (runs / "verl").mkdir(parents=True)
    shutil.copyfile(REAL / QWEN, runs / "verl" / "train.log")
    write_dump(runs / "verl" / "rollout_data")
    (runs / "trl" / "checkpoint-250").mkdir(parents=True)
    shutil.copyfile(REAL / TRL_STATE, runs / "trl" / "checkpoint-250" / "trainer_state.json")
    _completions(runs / "trl")
    ws = workspace([runs], tmp_path / "s.sqlite")
    ws.poll_once()
    c = TestClient(create_app(ws), base_url=LOCAL)
    listed = c.get("/api/runs", params={"sort": "name"}).json()
    assert [r["path"] for r in listed["runs"]] == [str(runs / "verl" / "train.log"), str(runs / "trl")]
    assert listed["messages"] == [f"serve: in {runs}: 2 rollout folders paired with their logs"]
    verl, trl = (r["id"] for r in listed["runs"])
    assert c.get(f"/api/runs/{verl}/rollouts").json()["available"] == list(range(1, 31))
    assert c.get(f"/api/runs/{trl}/rollouts").json()["available"] == [1, 2, 3]
    ws.close()


def test_rlvitals_files_are_told_by_name_and_content_and_a_numbered_log_is_a_run(tmp_path: Path) -> None:
    """An alert file under any name (its first object begins with "alert_id"), this server's own state
    in the served folder, and a metrics log named 3.jsonl: a run, not a rollout dump."""
    folder = tmp_path / "runs"
    _log(folder / "3.jsonl")
    alert = {"alert_id": "b7e8bd30bd4aaad0", "key": "k", "kind": "new", "check": "entropy_collapse", "step": 3}
    (folder / "my_alerts.jsonl").write_text(json.dumps(alert) + "\n", encoding="utf-8")
    ws = workspace([folder], folder / "serve.sqlite")
    ws.poll_once()
    assert [Path(s["path"]).name for s in ws.summaries()] == ["3.jsonl"]
    own = len([p for p in folder.iterdir() if p.name != "3.jsonl"])  # the alerts, the state and its WAL files
    assert own >= 2 and ws.notes()[0] == f"serve: in {folder.resolve()}: {own} rlvitals files skipped"
    assert dump_files(sorted(folder.iterdir())) == []
    ws.close()


def _runs(folder: Path, mtimes: dict[str, int]) -> None:
    for name, mtime in mtimes.items():
        _log(folder / name / "metrics.jsonl")
        os.utime(folder / name / "metrics.jsonl", (mtime, mtime))


def test_runs_are_listed_by_last_write_or_by_name_in_natural_order(tmp_path: Path) -> None:
    folder = tmp_path / "sweep"
    _runs(folder, {"run10": 1_700_000_300, "run2": 1_700_000_100, "run1": 1_700_000_200})
    ws = workspace([folder], tmp_path / "s.sqlite")
    ws.poll_once()
    c = TestClient(create_app(ws), base_url=LOCAL)

    def order(**params: str) -> list[str]:
        return [r["label"].split("/")[0] for r in c.get("/api/runs", params=params).json()["runs"]]

    assert order() == order(sort="updated") == ["run10", "run1", "run2"]  # the most recently written first
    assert order(sort="name") == ["run1", "run2", "run10"]  # run2 before run10
    assert [r["modified"] for r in ws.summaries()] == [1_700_000_300, 1_700_000_200, 1_700_000_100]
    with (folder / "run2" / "metrics.jsonl").open("ab") as f:  # run2 grows: it comes first now
        f.write(list(jsonl_lines(Scenario(steps=31)))[-1] + b"\n")
    os.utime(folder / "run2" / "metrics.jsonl", (1_700_000_400, 1_700_000_400))
    ws.poll_once()
    assert order() == ["run2", "run10", "run1"] and order(sort="name") == ["run1", "run2", "run10"]
    index = c.get("/", params={"sort": "name"}).text
    rows = re.findall(r'<a href="/runs/\w+" title="[^"]*">(run\d+)/', index)
    assert rows == ["run1", "run2", "run10"]
    assert '<a href="?sort=name" aria-current="true">' in index and '<a href="?sort=updated">' in index
    assert '<a href="?sort=updated" aria-current="true">' in c.get("/").text  # the default, said so
    bad = c.get("/", params={"sort": "size"})
    assert bad.status_code == 400 and bad.json()["detail"] == (
        "sort 'size': expected one of updated, name; open the list with ?sort=updated (most recently written "
        "first) or ?sort=name")
    assert c.get("/api/runs", params={"sort": "size"}).status_code == 422  # the API's schema names the two
    ws.close()


def test_pairing_that_is_not_clear_joins_nothing_and_says_why(tmp_path: Path) -> None:
    a, b = tmp_path / "runs" / "a.log", tmp_path / "runs" / "b.log"
    shared = tmp_path / "runs" / "rollout_data"
    dumps = {shared: (shared / "1.jsonl",)}
    p = pair(dumps, [a, b])
    assert p.pairs == {} and p.alone == (shared,)
    assert p.notes == (f"serve: the rollouts in {shared} lie beside 2 logs (a.log, b.log), so they are joined to "
                       f"none; serve the run's log as its own PATH with --rollouts {shared}",)
    train, val, other = (tmp_path / "runs" / n for n in ("rollout_data", "val_data", "dumps"))
    two = {train: (train / "1.jsonl",), val: (val / "1.jsonl",)}
    assert pair(two, [a]).pairs == {a: train}  # the validation dumps are set aside
    three = {**two, other: (other / "1.jsonl",)}
    none = pair(three, [a])
    assert none.pairs == {} and none.notes == (
        f"serve: {a} has 3 rollout folders beside it (rollout_data, val_data, dumps), so none is joined to it; "
        "serve it as its own PATH with --rollouts DIR",)
    trl = tmp_path / "runs" / "completions"
    mixed = {train: (train / "1.jsonl",), trl: (trl / "completions_00001.parquet",)}
    assert pair(mixed, [a], {a: "trl-state"}).pairs == {a: trl}  # a TRL log takes the TRL completions
    assert pair(mixed, [a], {a: "verl-console"}).pairs == {a: train}


def test_a_log_in_a_sub_folder_is_the_one_below_the_rollouts(tmp_path: Path) -> None:
    """veRL's default layout: <project>/<experiment>.jsonl and rollout_data/ side by side in the
    working folder; two experiments there make it unclear."""
    root = tmp_path / "work"
    dumps = {root / "rollout_data": (root / "rollout_data" / "1.jsonl",)}
    first = root / "proj" / "exp1.jsonl"
    assert pair(dumps, [first]).pairs == {first: root / "rollout_data"}
    assert pair(dumps, [first, root / "proj" / "exp2.jsonl"]).pairs == {}


def test_the_counted_line_names_each_kind_once_and_nothing_when_all_are_runs(tmp_path: Path) -> None:
    assert passed_line(tmp_path, Found(), 0) is None
    found = Found(own=1, other=3, rollouts={tmp_path / "r1": (), tmp_path / "r2": (), tmp_path / "r3": ()})
    assert passed_line(tmp_path, found, 2) == (f"serve: in {tmp_path}: 2 rollout folders paired with their logs, "
                                               "1 rollout folder not paired, 1 rlvitals file skipped, 3 other files "
                                               "are not logs")
    _log(tmp_path / "f" / "metrics.jsonl")
    (tmp_path / "f" / ".hidden").write_text("x")
    d = Discovery(None)
    seen = d.scan(tmp_path / "f")
    assert seen.logs == [tmp_path / "f" / "metrics.jsonl"] and (seen.own, seen.other) == (0, 1)
    again = d.scan(tmp_path / "f")  # judged once: the counts hold at every scan
    assert again.logs == seen.logs and (again.own, again.other) == (0, 1)


def test_a_served_rollout_folder_is_no_run(tmp_path: Path) -> None:
    write_dump(tmp_path / "rollout_data", steps=3)
    ws = workspace([tmp_path / "rollout_data"], tmp_path / "s.sqlite")
    ws.poll_once()
    assert ws.summaries() == []
    root = (tmp_path / "rollout_data").resolve()
    assert ws.notes() == [f"serve: in {root}: 1 rollout folder not paired",
                          f"serve: no training log found yet in {root} or its sub-folders (4 levels deep); logs "
                          "written there later are picked up"]
    ws.close()


def test_dumps_whose_prompts_are_longer_than_the_sniffed_head_are_still_dumps(tmp_path: Path) -> None:
    """veRL writes ``input`` first: a 20 kB prompt (a long chat) still marks the file as a dump."""
    from rlvitals.rollout.writers import write_verl_dump

    folder = tmp_path / "exp"
    _log(folder / "metrics.jsonl")
    long = "Solve the problem below step by step. " * 600
    records = [{"prompt": long, "response": str(s), "score": float(s == 2), "target": "2"} for s in range(4)]
    for step in (1, 2):
        write_verl_dump(records, folder / "rollout_data", step)
    assert len(long) > 20_000 and len(dump_files(sorted((folder / "rollout_data").iterdir()))) == 2
    ws = workspace([folder], tmp_path / "s.sqlite")
    ws.poll_once()
    assert [Path(s["path"]).name for s in ws.summaries()] == ["metrics.jsonl"]
    assert ws.notes()[0] == f"serve: in {folder.resolve()}: 1 rollout folder paired with its log"
    ws.close()


def test_a_served_log_file_pairs_the_rollouts_beside_it_as_its_folder_would(demo: tuple[Path, Path],
                                                                           tmp_path: Path) -> None:
    """``rlvitals serve FILE``: the demo's veRL log alone (``rollout_data/`` one folder up, veRL's
    default layout) and a log with its dumps in a sub-folder beside it are each paired, on a real
    server; the demo's README and alerts are not counted, the TRL completions are set aside."""
    folder, log = demo
    exp = tmp_path / "exp"
    _log(exp / "metrics.jsonl")
    write_dump(exp / "rollout_data", steps=7)
    ws = workspace([log, exp / "metrics.jsonl"], tmp_path / "s.sqlite")
    ws.poll_once()
    try:
        with ServerThread(ws, "127.0.0.1") as srv:
            listed = _get(srv.url + "api/runs?sort=name")
            assert sorted(r["path"] for r in listed["runs"]) == sorted([str(log), str(exp / "metrics.jsonl")])
            assert listed["messages"] == [f"serve: in {log}: 1 rollout folder paired with its log, 1 rollout "
                                          "folder not paired",  # completions/ is TRL's: set aside, as for the folder
                                          f"serve: in {exp / 'metrics.jsonl'}: 1 rollout folder paired with its log"]
            demo_rollouts = _get(srv.url + f"api/runs/{run_id(str(log))}/rollouts")
            assert demo_rollouts["available"] == list(range(1, 41))  # rollout_data/, not completions/
            assert _get(srv.url + f"api/runs/{run_id(str(exp / 'metrics.jsonl'))}/rollouts")["available"] == \
                list(range(1, 8))
            assert 'id="rollouts"' in _get(srv.url + f"runs/{run_id(str(log))}")
    finally:
        ws.close()


def test_a_served_log_file_beside_another_log_joins_their_rollouts_to_neither(tmp_path: Path) -> None:
    """Two logs in one folder with one rollout folder beside them: serving one of them alone pairs
    nothing, as serving the folder does, and says why; the other log is not served."""
    runs = tmp_path / "runs"
    _log(runs / "a.jsonl")
    _log(runs / "b.jsonl")
    write_dump(runs / "rollout_data", steps=3)
    ws = workspace([runs / "a.jsonl"], tmp_path / "s.sqlite")
    ws.poll_once()
    c = TestClient(create_app(ws), base_url=LOCAL)
    listed = c.get("/api/runs").json()
    assert [r["path"] for r in listed["runs"]] == [str(runs / "a.jsonl")]
    shared = runs / "rollout_data"
    assert listed["messages"] == [
        f"serve: in {runs / 'a.jsonl'}: 1 rollout folder not paired",
        f"serve: the rollouts in {shared} lie beside 2 logs (a.jsonl, b.jsonl), so they are joined to none; serve "
        f"the run's log as its own PATH with --rollouts {shared}"]
    assert c.get(f"/api/runs/{run_id(str(runs / 'a.jsonl'))}/rollouts").status_code == 404
    (runs / "b.jsonl").unlink()  # the other run is gone: the next scan pairs the rollouts with a.jsonl
    ws.poll_once()
    assert ws.notes()[0] == f"serve: in {runs / 'a.jsonl'}: 1 rollout folder paired with its log"
    assert c.get(f"/api/runs/{run_id(str(runs / 'a.jsonl'))}/rollouts").json()["available"] == [1, 2, 3]
    ws.close()


def test_probe_results_are_no_run_and_join_the_served_runs_rollouts(tmp_path: Path) -> None:
    """rlvitals-probes.jsonl looks like a metrics log (a step and numbers per line) but is rlvitals' own; in
    the rollout folder paired with a log, its per-step faithfulness joins the run, and a re-probe is seen."""
    from rlvitals.rollout import PROBES_FILE

    folder = tmp_path / "runs"
    _log(folder / "metrics.jsonl")
    write_dump(folder / "rollout_data", steps=6)
    probes = "".join(json.dumps({"model": "m", "step": s, "rollouts": 2, "reasoning/faithfulness": v}) + "\n"
                     for s, v in ((2, 0.9), (4, 0.7)))
    (folder / "rollout_data" / PROBES_FILE).write_text(probes, encoding="utf-8")
    (folder / PROBES_FILE).write_text(probes, encoding="utf-8")  # beside the log too: still not a run
    ws = workspace([folder], tmp_path / "s.sqlite")
    try:
        ws.poll_once()
        assert [Path(s["path"]).name for s in ws.summaries()] == ["metrics.jsonl"]
        rid = run_id(str(folder / "metrics.jsonl"))
        served = ws.get(rid)
        assert served.run.series("reasoning/faithfulness")[1].tolist() == [0.9, 0.7]
        (folder / "rollout_data" / PROBES_FILE).write_text(probes + json.dumps(
            {"model": "m", "step": 6, "rollouts": 2, "reasoning/faithfulness": 0.5}) + "\n", encoding="utf-8")
        ws.poll_once()
        assert ws.get(rid).run.series("reasoning/faithfulness")[1].tolist() == [0.9, 0.7, 0.5]
    finally:
        ws.close()


def test_a_run_reached_through_several_links_is_served_once_and_a_loop_breaks_nothing(tmp_path: Path) -> None:
    """Links to a run folder (``latest``, ``current``), a link back up and one to the served folder itself
    listed one run up to five times, and a loop of links (``a -> b -> a``) made every scan raise: the run is
    listed once, by its real path, and the list answers over real HTTP."""
    from run.test_load import _linked_runs

    runs = _linked_runs(tmp_path)
    ws = workspace([runs], tmp_path / "s.sqlite")
    ws.poll_once()
    with ServerThread(ws, "127.0.0.1") as srv:
        listed = _get(srv.url + "api/runs")
        files = _get(srv.url + "api/roots/0/files")
    assert [r["path"] for r in listed["runs"]] == [str(runs.resolve() / "exp1" / "train.jsonl")]
    assert listed["runs"][0]["status"] == "ready" and listed["runs"][0]["last_step"] == 20
    assert not [m for m in listed["messages"] if "failed" in m], listed["messages"]
    assert {e["name"] for e in files["entries"]} == {"exp1", "latest", "current", "self"}  # the loop is no entry
    ws.close()
