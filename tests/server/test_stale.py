"""A served log that turns to garbage, empty or gone keeps its last good reading on the dashboard, which now
says so on that run: the run list and the run's page (a real server over HTTP) show the error and mark the
reading stale, the events a page polls carry it, and a log that is readable again clears it. In real
Chromium, an open page and the run list say it without a reload."""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import REAL

from rlvitals.server import ServerThread, ServeState, Workspace, WorkspaceOptions, run_id
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

from .test_app import Clock  # a minute a call: every poll sees the files settled

tbx = pytest.importorskip("tensorboardX")

TRL_STATE = "trl__UnslothGRPO__checkpoint-250_trainer_state.json"


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 - a loopback server of this test
        body = r.read().decode("utf-8")
    return json.loads(body) if r.headers["content-type"] == "application/json" else body


def _jsonl(path: Path, steps: int = 40) -> None:
    path.write_bytes(b"".join(line + b"\n" for line in jsonl_lines(Scenario(steps=steps))))


def _tensorboard(folder: Path, steps: int) -> None:
    w = tbx.SummaryWriter(str(folder))
    for step in range(1, steps + 1):
        w.add_scalar("train/loss", 1 / step, step)
    w.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("gone", "emptied", "garbage", "renewed"):
        _jsonl(runs / f"{name}.jsonl")
    (runs / "trl").mkdir()
    shutil.copyfile(REAL / TRL_STATE, runs / "trl" / "trainer_state.json")
    _tensorboard(runs / "tb", 12)
    for name in ("a", "b"):  # a folder of two runs: one source
        _tensorboard(runs / "tbs" / name, 8)
    return runs.resolve()


def test_a_log_gone_emptied_or_turned_to_garbage_is_shown_stale_with_why(folder: Path, tmp_path: Path) -> None:
    ws = Workspace([folder], ServeState(tmp_path / "serve.sqlite"), WorkspaceOptions(), clock=Clock())
    ws.poll_once()
    with ServerThread(ws, "127.0.0.1") as srv:
        before = {Path(r["path"]).name: r for r in _get(srv.url + "api/runs")["runs"]}
        assert {n: (r["status"], r["stale"], r["error"]) for n, r in before.items()} == {
            n: ("ready", False, None) for n in ("gone.jsonl", "emptied.jsonl", "garbage.jsonl", "renewed.jsonl",
                                                "trl", "tb", "a", "b")}
        seq = _get(srv.url + "api/events")["seq"]

        (folder / "gone.jsonl").unlink()
        (folder / "emptied.jsonl").write_bytes(b"")
        (folder / "garbage.jsonl").write_bytes(os.urandom(4000).replace(b"\n", b"") + b"\n")
        (folder / "renewed.jsonl").write_bytes(b"")  # emptied, then written again below
        (folder / "trl" / "trainer_state.json").write_text('{"log_history": [{"loss": 0.5, "st')
        time.sleep(1.1)  # a new event file name (its time stamp) for the same folder
        tbx.SummaryWriter(str(folder / "tb")).close()  # a writer opened, never used: only a header
        for old in sorted((folder / "tb").glob("events.*"))[:-1]:
            old.unlink()
        shutil.rmtree(folder / "tbs" / "b")  # one run of the two gone: the other is read as before
        ws.poll_once()
        ws.poll_once()

        after = {Path(r["path"]).name: r for r in _get(srv.url + "api/runs")["runs"]}
        errors = {
            "gone.jsonl": f"{folder / 'gone.jsonl'}: the log is gone (deleted or moved away)",
            "emptied.jsonl": f"{folder / 'emptied.jsonl'}: the log is empty now (truncated, or rewritten)",
            "garbage.jsonl": f"{folder / 'garbage.jsonl'}: the log was replaced by a file that is no training log "
                             "rlvitals can read",
            "tb": f"{folder / 'tb'}: the log holds no metrics now (its files were emptied, deleted or rewritten)",
            "b": f"{folder / 'tbs' / 'b'}: no longer in {folder / 'tbs'} (its files were deleted, or hold no "
                 "metrics now)"}
        for name, error in errors.items():
            assert after[name]["error"] == error, name
        assert after["trl"]["error"].startswith(f"{folder / 'trl' / 'trainer_state.json'}:1:")  # the reader's error
        zh = {"gone.jsonl": "：日志不见了（被删除或移走）", "emptied.jsonl": "：日志现在是空的（被截断或重写）",
              "garbage.jsonl": "：日志被替换成了一个 rlvitals 读不了的文件，它不是训练日志",
              "tb": "：日志里现在没有指标（其文件被清空、删除或重写）",
              "b": f"：已不在 {folder / 'tbs'} 中（其文件被删除，或现在没有指标）"}
        for name, said in zh.items():
            assert after[name]["error_zh"].endswith(said), name
        assert (after["a"]["stale"], after["a"]["error"], after["a"]["last_step"]) == (False, None, 8)
        for name, row in after.items():  # every last good reading is kept, marked stale
            if name != "a":
                assert (row["status"], row["stale"], row["last_step"], row["version"]) == (
                    "ready", True, before[name]["last_step"], before[name]["version"]), name

        changed = {Path(r["path"]).name: r for r in _get(srv.url + f"api/events?after={seq}")["runs"]}
        assert {n: r["error"] for n, r in changed.items() if n in errors} == errors  # the polling pages hear it

        rid = run_id(str(folder / "gone.jsonl"))
        page = _get(srv.url + f"runs/{rid}")
        assert 'id="rlv-live-stale" class="rlv-run-error" role="note">' in page  # not hidden
        assert "Stale: the last good reading is shown, because" in page and errors["gone.jsonl"] in page
        assert '<b id="rlv-live-step">40</b>' in page and 'id="rlv-data"' in page  # the last reading, drawn
        assert "已过时：显示的是上次成功读取的内容，因为" in _get(srv.url + f"runs/{rid}?lang=zh")
        assert _get(srv.url + f"api/runs/{rid}")["stale"] is True
        index = _get(srv.url)
        assert index.count("Stale: the last good reading is shown, because") == 7

        _jsonl(folder / "renewed.jsonl", steps=50)  # readable again: no longer stale
        ws.poll_once()
        renewed = next(r for r in _get(srv.url + "api/runs")["runs"] if r["path"].endswith("renewed.jsonl"))
        assert (renewed["stale"], renewed["error"], renewed["last_step"]) == (False, None, 50)
        fresh = _get(srv.url + f"runs/{run_id(str(folder / 'renewed.jsonl'))}")
        assert 'id="rlv-live-stale" class="rlv-run-error" role="note" hidden>' in fresh
    ws.close()


def test_a_log_never_read_is_listed_unreadable_not_stale(tmp_path: Path) -> None:
    """A log that gave no reading yet has nothing to keep: its error lists it as unreadable, as before."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "trainer_state.json").write_text('{"log_history": [{"loss": 0.5, "st')
    ws = Workspace([runs], ServeState(tmp_path / "serve.sqlite"), WorkspaceOptions(), clock=Clock())
    ws.poll_once()
    [row] = ws.summaries()
    assert (row["status"], row["stale"]) == ("unreadable", False) and row["error"].startswith(f"{runs.resolve()}/")
    ws.close()


@pytest.mark.browser
def test_a_log_deleted_while_its_page_is_open_is_marked_stale_without_a_reload(browser: Any, tmp_path: Path) -> None:
    """The page keeps the last good reading, and its bar says why it is stale as soon as the log is gone;
    the run list's row says it too. Both found out by polling, with no reload."""
    runs = tmp_path / "runs"
    runs.mkdir()
    log = runs / "grpo.jsonl"
    _jsonl(log, steps=60)
    ws = Workspace([runs], ServeState(tmp_path / "s.sqlite"), WorkspaceOptions(interval=0.2, rescan=1.0))
    ws.poll_once()
    ws.start()
    rid = run_id(str(log.resolve()))
    said = f"{log.resolve()}: the log is gone (deleted or moved away)"
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    try:
        with ServerThread(ws, "127.0.0.1") as srv:
            page, listing = context.new_page(), context.new_page()
            for p in (page, listing):
                p.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(srv.url + "runs/" + rid)
            listing.goto(srv.url)
            assert page.locator("#rlv-live-stale").is_hidden()
            for p in (page, listing):
                p.evaluate("window.__same_document = 1")
            log.unlink()
            page.wait_for_function("() => !document.getElementById('rlv-live-stale').hidden", timeout=8_000)
            assert page.locator("#rlv-live-stale code .l-en").inner_text() == said
            assert page.locator("#rlv-live-step").inner_text() == "60"  # the last good reading stays
            row = f'tr[data-run="{rid}"] .rlv-run-error'
            listing.wait_for_function(f"() => document.querySelector('{row}') !== null", timeout=8_000)
            assert said in listing.locator(row).inner_text()
            assert page.evaluate("window.__same_document") == 1 and listing.evaluate("window.__same_document") == 1
            assert errors == []
    finally:
        context.close()
        ws.close()
