"""A file name that is not valid UTF-8 (Python keeps its bytes as lone surrogates) made every ``--json`` output
and ``report`` exit 3 and every ``serve`` answer a 500. It is shown escaped (``run\\xff.jsonl``, as ``ls -b``
shows it) in the JSON, the report and the dashboard, and the run is read as any other."""

from __future__ import annotations

import io
import os
from pathlib import Path

import orjson
import pytest
from fastapi.testclient import TestClient

from rlvitals.cli import main
from rlvitals.server import ServeState, Workspace, WorkspaceOptions, create_app, run_id
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

SHOWN = "run\\xff.jsonl"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    log = os.path.join(os.fsencode(tmp_path), b"run\xff.jsonl")
    with open(log, "wb") as fh:
        fh.write(b"\n".join(jsonl_lines(Scenario(steps=60))) + b"\n")
    return tmp_path


def test_json_and_the_report_show_the_name_escaped(folder: Path, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["diagnose", "--json", str(folder)], out, err) == 0, err.getvalue()
    [run] = orjson.loads(out.getvalue())["runs"]
    assert run["path"] == f"{folder}/{SHOWN}" and run["steps"] == 60
    page = tmp_path / "report.html"
    assert main(["report", "-o", str(page), str(folder)], io.StringIO(), err) == 0, err.getvalue()
    html = page.read_bytes().decode("utf-8")  # valid UTF-8 through and through
    assert SHOWN in html


def test_serve_lists_and_opens_the_run(folder: Path, tmp_path: Path) -> None:
    ws = Workspace([folder], ServeState(tmp_path / "serve.sqlite"), WorkspaceOptions(), clock=lambda: 1000.0)
    try:
        ws.poll_once()
        client = TestClient(create_app(ws), base_url="http://127.0.0.1")
        listed = client.get("/api/runs")
        assert listed.status_code == 200, listed.text
        [run] = listed.json()["runs"]
        assert SHOWN in run["label"]
        rid = run_id(str(next(folder.glob("run*.jsonl")).resolve()))
        for url in (f"/api/runs/{rid}", f"/runs/{rid}", "/"):
            answer = client.get(url)
            assert answer.status_code == 200, (url, answer.text[:300])
        assert SHOWN in client.get(f"/runs/{rid}").text
    finally:
        ws.close()
