"""The dashboard's routes through FastAPI's TestClient, over real logs: every real fixture listed with
its diagnosis' verdict and served as the layered page; the JSON API and its OpenAPI; the token and the
loopback Host rule; path confinement against '..', absolute paths and symbolic links out; rollout
markup shown as data only; live growth of a veRL JSONL log; the SQLite (WAL) state across a restart;
and the CLI's refusals."""

from __future__ import annotations

import html
import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REAL
from fastapi.testclient import TestClient
from report.test_model import ORPO, QWEN, XSS, write_dump

import rlvitals
from rlvitals.cli import main
from rlvitals.diagnosis import READING_ORDER, diagnose
from rlvitals.errors import RlvitalsError
from rlvitals.server import ServeState, Workspace, WorkspaceOptions, create_app, run_id
from rlvitals.server.app import RunList
from rlvitals.server.runner import listen
from rlvitals.server.security import AccessError, check_bind, confine
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

LOCAL = "http://127.0.0.1"
TOKEN = "t0ken-for-the-tests-0123456789"
REAL_LOGS = sorted(p.name for p in REAL.iterdir() if p.suffix in (".log", ".csv", ".json"))


class Clock:
    """A clock the tests move: the throttles see time pass without the tests waiting."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 60.0
        return self.now


def workspace(paths: list[Path], state: Path, **options: Any) -> Workspace:
    return Workspace(paths, ServeState(state), WorkspaceOptions(**options), clock=Clock())


@pytest.fixture(scope="module")
def fixtures_ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    ws = workspace([REAL], tmp_path_factory.mktemp("state") / "serve.sqlite")
    ws.poll_once()
    ws.poll_once()  # the clock moved past ``settle``: a log whose last line lacks its newline is read whole
    yield ws
    ws.close()


@pytest.fixture(scope="module")
def client(fixtures_ws: Workspace) -> TestClient:
    return TestClient(create_app(fixtures_ws), base_url=LOCAL)


def _write(path: Path, sc: Scenario, start: int, stop: int, mode: str = "wb") -> None:
    lines = list(jsonl_lines(sc))[start:stop]
    with path.open(mode) as f:
        f.write(b"".join(line + b"\n" for line in lines))


# --- every real fixture ------------------------------------------------------------------------
def test_every_real_fixture_is_listed_with_its_verdict(client: TestClient) -> None:
    runs = {Path(r["label"]).name: r for r in client.get("/api/runs").json()["runs"]}
    assert set(runs) == set(REAL_LOGS)
    index = client.get("/").text
    for name in REAL_LOGS:
        expected = diagnose(rlvitals.load(REAL / name)[0])
        row = runs[name]
        assert row["id"] == run_id(str(REAL.resolve() / name))
        assert (row["status"], row["verdict"], row["layers"]) == ("ready", expected.verdict, dict(expected.layers))
        assert row["last_step"] == int(expected.run.steps[-1])
        tr = re.search(rf'<tr data-run="{row["id"]}" data-version="\d+" data-verdict="(\w+)">', index)
        assert tr is not None and tr.group(1) == expected.verdict
        assert f'href="/runs/{row["id"]}"' in index


@pytest.mark.parametrize("name", REAL_LOGS)
def test_every_real_fixture_has_its_layered_page(client: TestClient, name: str) -> None:
    rid = run_id(str(REAL.resolve() / name))
    page = client.get(f"/runs/{rid}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    for layer in READING_ORDER:
        assert f'id="layer-{layer}"' in html
    d = diagnose(rlvitals.load(REAL / name)[0])
    shown = {m.group(1) for m in re.finditer(r'<article class="rlv-finding s-(?:fail|warn|note)" id="r0-f(\d+)"', html)}
    assert shown == {str(i) for i, f in enumerate(d.findings) if f.status in ("warn", "fail", "note")}
    assert f'<div id="rlv-live" class="rlv-live" data-run="{rid}"' in html
    assert '<script src="/static/plotly.min.js?v=' in html and "cdn.plot.ly" not in html
    assert html.index('<script src="/static/plotly.min.js?v=') > html.index('<main>')  # not before the first paint
    api = client.get(f"/api/runs/{rid}").json()
    assert api["diagnosis"]["verdict"] == d.verdict == api["verdict"]
    # where the run tops out: in the API as in diagnose --json, and on the page's L5 section with its chart
    assert d.forecast is not None and api["diagnosis"]["forecast"]["ceiling"] == d.forecast.to_json()["ceiling"]
    held = d.forecast.primary is not None and d.forecast.primary.holds
    assert html.count('<div class="rlv-forecast"') == 1
    assert (re.search(r'class="rlv-forecast"[^>]*>\s*<p>[^<]*<span class="l-en">[^<]*heads for a ceiling', html)
            is not None) == held
    assert [f["check"] for f in client.get(f"/api/runs/{rid}/findings").json()["findings"]] == \
        [f.check for f in d.findings]


def test_pages_open_in_the_language_asked_or_remembered(fixtures_ws: Workspace) -> None:
    c = TestClient(create_app(fixtures_ws), base_url=LOCAL)
    rid = run_id(str(REAL.resolve() / QWEN))
    assert '<html lang="en" data-lang="en">' in c.get("/").text
    asked = c.get("/?lang=zh")
    assert '<html lang="zh" data-lang="zh">' in asked.text and asked.cookies.get("rlvitals_lang") == "zh"
    assert '<button type="button" data-set-lang="zh" aria-pressed="true">' in asked.text
    # the cookie (set by ?lang= or by a page's switch) carries the choice to the next page
    page = c.get(f"/runs/{rid}").text
    assert '<html lang="zh" data-lang="zh">' in page and 'data-set-lang="zh" aria-pressed="true"' in page
    assert '<html lang="en" data-lang="en">' in c.get(f"/runs/{rid}?lang=en").text
    assert '<html lang="en" data-lang="en">' in c.get("/").text
    c.cookies.set("rlvitals_lang", "fr")
    assert '<html lang="en" data-lang="en">' in c.get("/").text  # a stray cookie is not an error
    bad = c.get("/?lang=fr")
    assert bad.status_code == 400
    assert bad.json() == {"detail": "lang 'fr': expected en or zh; open the page with ?lang=en or ?lang=zh"}


def test_the_run_list_names_the_algorithm_short_with_its_description(client: TestClient) -> None:
    runs = {r["label"]: r for r in client.get("/api/runs").json()["runs"]}
    orpo = runs["trl-unsloth__notebooks__Llama3_8B-ORPO.training_table.csv"]
    assert (orpo["algorithm_short"], orpo["algorithm"]) == ("ORPO", ORPO)
    assert orpo["path"] == str(REAL.resolve() / orpo["label"])
    assert f'<td class="rlv-algo"><span title="{ORPO}">ORPO</span></td>' in client.get("/").text


def test_the_run_list_names_its_layer_columns_in_both_languages(client: TestClient) -> None:
    page = client.get("/").text
    key = page.split('id="rlv-layer-key"', 1)[1].split("</p>", 1)[0]
    head = page.split("<thead>", 1)[1].split("</thead>")[0]
    heads = [h.split("</span>")[0] for h in head.split('<span class="l-en" title="')[1:]]
    ids = [h.split('">')[1] for h in heads if not h.split('">')[1].startswith("eff")]
    # the key names the layer columns in the order they stand, English and Chinese
    assert [part.split(" ")[0] for part in key.split('<span class="l-en">')[1].split("</span>")[0].split(" · ")] == ids
    assert "L1 stability" in key and "L1 稳定性" in key


# --- JSON API -----------------------------------------------------------------------------------
def test_openapi_lists_the_api_and_docs_are_off_unless_asked(client: TestClient, fixtures_ws: Workspace) -> None:
    spec = client.get("/openapi.json").json()
    assert {"/api/runs", "/api/runs/{rid}", "/api/runs/{rid}/series", "/api/runs/{rid}/findings",
            "/api/runs/{rid}/rollouts", "/api/events", "/api/roots/{root}/files"} <= set(spec["paths"])
    params = {p["name"] for p in spec["paths"]["/api/runs/{rid}/series"]["get"]["parameters"]}
    assert params == {"rid", "key", "start", "end", "buckets"}
    assert client.get("/docs").status_code == 404
    assert TestClient(create_app(fixtures_ws, docs=True), base_url=LOCAL).get("/docs").status_code == 200


def test_series_is_downsampled_over_the_range_asked(client: TestClient) -> None:
    name = "verl__verl_training_log__grpo_run_deepseek7b_llm.log"
    rid = run_id(str(REAL.resolve() / name))
    run = rlvitals.load(REAL / name)[0]
    x, y = run.series("actor/entropy", train_only=False)
    whole = client.get(f"/api/runs/{rid}/series", params={"key": "actor/entropy", "buckets": 2000}).json()
    assert whole["x"] == [int(v) for v in x] and whole["n"] == len(x)  # fewer points than 4 × buckets: all kept
    part = client.get(f"/api/runs/{rid}/series",
                      params={"key": "actor/entropy", "start": 200, "end": 600, "buckets": 10}).json()
    inside = (x >= 200) & (x <= 600)
    assert part["n"] == int(inside.sum()) and len(part["x"]) <= 40
    assert part["x"][0] == 200 and part["x"][-1] == 600 and all(200 <= v <= 600 for v in part["x"])
    top = int(x[inside][y[inside].argmax()])
    assert top in part["x"]  # the range's highest value survives the downsampling
    bad = client.get(f"/api/runs/{rid}/series", params={"key": "no/such_metric"})
    assert bad.status_code == 404 and re.search(r"logged no such metric", bad.json()["detail"])
    back = client.get(f"/api/runs/{rid}/series", params={"key": "actor/entropy", "start": 9, "end": 3})
    assert back.status_code == 400 and re.search(r"start=9.0 is after end=3.0", back.json()["detail"])
    assert client.get(f"/api/runs/{rid}/series", params={"key": "actor/entropy", "buckets": 0}).status_code == 422
    for name, bound in (("start", "nan"), ("end", "inf"), ("start", "-inf")):  # NaN kept no step, yet answered 200
        odd = client.get(f"/api/runs/{rid}/series", params={"key": "actor/entropy", name: bound})
        assert odd.status_code == 400, odd.text
        assert re.search(rf"{name}=-?(nan|inf) is not a step; expected a finite number", odd.json()["detail"])


def test_unknown_run_and_missing_rollouts_say_what_to_do(client: TestClient) -> None:
    missing = client.get("/api/runs/0123456789abcdef")
    assert missing.status_code == 404 and re.search(r"no such run in this workspace", missing.json()["detail"])
    assert client.get("/runs/0123456789abcdef").status_code == 404
    rid = client.get("/api/runs").json()["runs"][0]["id"]
    none = client.get(f"/api/runs/{rid}/rollouts")
    assert none.status_code == 404 and re.search(rf"run {rid} has no rollout texts; start the server with "
                                                 "--rollouts DIR for its PATH", none.json()["detail"])


# --- token and Host -----------------------------------------------------------------------------
def test_token_is_required_and_accepted_by_header_or_cookie(fixtures_ws: Workspace) -> None:
    app = create_app(fixtures_ws, token=TOKEN)
    anon = TestClient(app, base_url="http://192.0.2.10:8765")
    for path in ("/", "/api/runs", "/openapi.json", "/static/live.js", "/runs/x", "/api/roots/0/files?path=..%2f"):
        refused = anon.get(path)
        assert refused.status_code == 401, path
        assert refused.headers["www-authenticate"].startswith("Bearer")
        assert re.search(r"needs its token", refused.json()["detail"])
    assert anon.get("/api/runs", headers={"Authorization": "Bearer " + TOKEN[:-1] + "x"}).status_code == 401
    assert anon.get("/api/runs", headers={"Authorization": "Bearer " + TOKEN}).status_code == 200
    assert anon.get("/api/runs", params={"token": TOKEN}).status_code == 200  # scripts may pass it once per call

    browser = TestClient(app, base_url="http://192.0.2.10:8765", follow_redirects=False)
    first = browser.get("/", params={"token": TOKEN, "lang": "en"})
    assert first.status_code == 303 and first.headers["location"] == "/?lang=en"  # token out of the address bar
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict") and "Path=/" in cookie
    assert browser.get("/").status_code == 200  # the cookie carries it now
    assert browser.get("/api/runs").status_code == 200


@pytest.mark.parametrize("path", ["/%2F%2Fevil.example", "/%5Cevil.example", "/%2F%5Cevil", "/%2F/evil.example"])
def test_the_token_redirect_never_leaves_this_server(fixtures_ws: Workspace, path: str) -> None:
    """The redirect that drops ?token= from the address bar once answered /%2F%2Fevil.example with
    Location ///evil.example: an open redirect to another host."""
    browser = TestClient(create_app(fixtures_ws, token=TOKEN), base_url="http://192.0.2.10:8765",
                         follow_redirects=False)
    answer = browser.get(path + "?token=" + TOKEN)
    location = answer.headers["location"]
    assert answer.status_code == 303 and location.startswith("/") and location[1:2] not in ("/", "\\"), location


def test_without_a_token_only_loopback_host_names_are_answered(fixtures_ws: Workspace) -> None:
    app = create_app(fixtures_ws)
    for base in ("http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765"):
        assert TestClient(app, base_url=base).get("/api/runs").status_code == 200, base
    rebound = TestClient(app, base_url="http://attacker.example:8765").get("/api/runs")
    assert rebound.status_code == 403 and re.search(r"not this machine's loopback name", rebound.json()["detail"])


def test_check_bind_refuses_other_addresses_without_a_long_token() -> None:
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    check_bind("0.0.0.0", TOKEN)
    with pytest.raises(RlvitalsError, match=r"--host 0.0.0.0 is reachable from other machines.*--token"):
        check_bind("0.0.0.0", None)
    with pytest.raises(RlvitalsError, match=r"--host my-box.lan is reachable"):
        check_bind("my-box.lan", None)
    with pytest.raises(RlvitalsError, match=r"the token has 5 characters; expected at least 16"):
        check_bind("192.0.2.2", "short")


# --- paths --------------------------------------------------------------------------------------
@pytest.fixture
def folder(tmp_path: Path) -> tuple[Path, Path]:
    served = tmp_path / "served"
    outside = tmp_path / "outside"
    (served / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP-SECRET-CONTENT", encoding="utf-8")
    _write(outside / "private.jsonl", Scenario(steps=20), 0, 20)
    _write(served / "run.jsonl", Scenario(steps=30), 0, 30)
    (served / "out").symlink_to(outside, target_is_directory=True)
    (served / "sub" / "leak.txt").symlink_to(outside / "secret.txt")
    (served / "private.jsonl").symlink_to(outside / "private.jsonl")
    (served / "sub" / "dangling").symlink_to(served / "gone")
    return served, tmp_path


def test_paths_are_confined_to_the_served_folder(folder: tuple[Path, Path]) -> None:
    served, tmp = folder
    ws = workspace([served], tmp / "s.sqlite")
    ws.poll_once()
    c = TestClient(create_app(ws), base_url=LOCAL)
    listing = c.get("/api/roots/0/files").json()
    assert {e["name"] for e in listing["entries"]} == {"run.jsonl", "sub"}  # links out are not listed
    assert [e["runs"] for e in listing["entries"] if e["name"] == "run.jsonl"] == [[run_id(str(served / "run.jsonl"))]]
    assert [Path(r["label"]).name for r in c.get("/api/runs").json()["runs"]] == ["run.jsonl"]  # nor served
    attempts = {
        "/api/roots/0/files?path=..%2foutside%2fsecret.txt": (403, r"'\.\.' is not allowed"),
        "/api/roots/0/files?path=sub%2f..%2f..%2foutside": (403, r"'\.\.' is not allowed"),
        "/api/roots/0/files?path=%2fetc%2fpasswd": (403, r"absolute paths are not allowed"),
        f"/api/roots/0/files?path={tmp}/outside/secret.txt": (403, r"absolute paths are not allowed"),
        "/api/roots/0/files?path=out%2fsecret.txt": (403, r"leads outside the served folder"),
        "/api/roots/0/files?path=sub%2fleak.txt": (403, r"leads outside the served folder"),
        "/api/roots/0/files?path=private.jsonl": (403, r"leads outside the served folder"),
        "/api/roots/0/files?path=sub%5c..%5c..%5coutside": (403, r"backslash"),
        "/api/roots/0/files?path=nothing-here": (404, r"nothing there in served folder 0"),
        "/api/roots/7/files?path=": (404, r"root 7: no such served folder"),
        "/static/..%2f..%2fserver%2fapp.py": (404, r"no such file|Not Found"),
        "/static/%2e%2e%2fsecurity.py": (404, r"no such file|Not Found"),
    }
    for url, (status, message) in attempts.items():
        r = c.get(url)
        assert r.status_code == status, url
        assert "TOP-SECRET-CONTENT" not in r.text and "data" not in r.json()
        assert re.search(message, r.json()["detail"]), (url, r.json())
    assert c.get("/api/roots/0/files?path=sub").json()["entries"] == []
    assert c.get("/static/live.js").status_code == 200


def test_confine_refuses_each_way_out(folder: tuple[Path, Path]) -> None:
    served, tmp = folder
    roots = [served.resolve()]
    assert confine(roots, 0, "run.jsonl") == served.resolve() / "run.jsonl"
    for rel, message in (("../outside", r"'\.\.' is not allowed"), ("/etc", r"absolute paths"),
                         ("out/secret.txt", r"leads outside"), ("a\x00b", r"NUL and backslash")):
        with pytest.raises(AccessError, match=message):
            confine(roots, 0, rel)


# --- escaping ----------------------------------------------------------------------------------
def test_rollout_markup_is_only_ever_data(tmp_path: Path) -> None:
    write_dump(tmp_path / "dump")
    ws = workspace([REAL / QWEN], tmp_path / "s.sqlite", rollouts=tmp_path / "dump")
    ws.poll_once()
    c = TestClient(create_app(ws), base_url=LOCAL)
    rid = run_id(str((REAL / QWEN).resolve()))
    r = c.get(f"/api/runs/{rid}/rollouts", params={"step": 16})
    assert r.headers["content-type"] == "application/json" and r.headers["x-content-type-options"] == "nosniff"
    texts = [x["response"] for g in r.json()["groups"] for x in g["rollouts"]]
    assert XSS in texts and r.json()["available"] == list(range(1, 31))
    assert r.json()["total"] == len(r.json()["groups"]) == 4  # the page says "4 of 4 groups shown"
    assert json.loads(r.text) == r.json()
    assert c.get(f"/api/runs/{rid}/rollouts", params={"step": 999}).status_code == 404
    page = c.get(f"/runs/{rid}")
    html = page.text
    assert XSS not in html and "window.__x=1" in html  # present only inside escaped JSON
    # the theme (head), Plotly, the data, the report script, live.js: none from the data
    assert len(re.findall(r"<script\b", html)) == 5
    csp = page.headers["content-security-policy"]
    assert "script-src 'self' 'sha256-" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]


# --- live growth and state ---------------------------------------------------------------------
def test_a_growing_log_is_diagnosed_again_and_announced(tmp_path: Path) -> None:
    log = tmp_path / "runs" / "grpo.jsonl"
    log.parent.mkdir()
    sc = Scenario(steps=120)
    _write(log, sc, 0, 60)
    ws = workspace([log.parent], tmp_path / "s.sqlite")
    c = TestClient(create_app(ws), base_url=LOCAL)
    assert c.get("/api/events").json() == {"seq": 0, "runs": [], "moved": {}}
    rid = run_id(str(log))
    assert ws.poll_once() == [rid]
    first = c.get("/api/events").json()
    assert [(r["id"], r["last_step"], r["version"]) for r in first["runs"]] == [(rid, 60, 1)]
    assert c.get("/api/events", params={"after": first["seq"]}).json()["runs"] == []
    assert ws.poll_once() == []  # nothing appended: nothing diagnosed again
    assert '<b id="rlv-live-step">60</b>' in c.get(f"/runs/{rid}").text
    _write(log, sc, 60, 90, mode="ab")
    assert ws.poll_once() == [rid]
    assert ws._memo[("page", rid)][0] == 2  # a page someone looks at is rebuilt before it is asked for
    later = c.get("/api/events", params={"after": first["seq"]}).json()
    assert [(r["last_step"], r["version"]) for r in later["runs"]] == [(90, 2)]
    assert later["runs"][0]["verdict"] == diagnose(rlvitals.load(log)[0]).verdict
    assert '<b id="rlv-live-step">90</b>' in c.get(f"/runs/{rid}").text
    assert c.get(f"/api/runs/{rid}/series", params={"key": "actor/entropy"}).json()["x"][-1] == 90
    (tmp_path / "runs" / "second.jsonl").write_bytes(b"".join(line + b"\n" for line in jsonl_lines(Scenario(steps=10))))
    ws.poll_once()  # a log started after the server shows up by itself
    assert {Path(r["label"]).name for r in c.get("/api/runs").json()["runs"]} == {"grpo.jsonl", "second.jsonl"}
    ws.close()


def test_state_is_sqlite_wal_and_a_restart_lists_runs_while_reading(tmp_path: Path) -> None:
    log = tmp_path / "grpo.jsonl"
    _write(log, Scenario(steps=50), 0, 50)
    ws = workspace([log], tmp_path / "s.sqlite")
    ws.poll_once()
    assert ws.state.journal_mode() == "wal"
    ws.close()
    again = workspace([log], tmp_path / "s.sqlite")
    c = TestClient(create_app(again), base_url=LOCAL)
    rid = run_id(str(log))
    listed = c.get("/api/runs").json()["runs"]
    assert [(r["id"], r["status"], r["last_step"], r["version"]) for r in listed] == [(rid, "loading", 50, 1)]
    busy = c.get(f"/api/runs/{rid}")
    assert busy.status_code == 503 and re.search(r"being read again after a restart", busy.json()["detail"])
    assert 'data-loading="1"' in c.get(f"/runs/{rid}").text
    again.poll_once()
    assert c.get(f"/api/runs/{rid}").json()["version"] == 2  # versions keep counting across the restart
    again.close()


def test_state_file_errors_name_the_fix(tmp_path: Path) -> None:
    bad = tmp_path / "not.sqlite"
    bad.write_text("this is not a database, it is a text file with enough bytes to be read" * 20)
    with pytest.raises(RlvitalsError, match=r"cannot use this file as the dashboard state .* --state NEW_FILE"):
        ServeState(bad)
    with pytest.raises(RlvitalsError, match=r"serve: no PATH given"):
        Workspace([], ServeState(tmp_path / "ok.sqlite"))


# --- CLI ----------------------------------------------------------------------------------------
def test_cli_refuses_other_hosts_without_token_and_busy_ports(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLVITALS_TOKEN", raising=False)
    state = str(tmp_path / "s.sqlite")
    assert main(["serve", str(tmp_path), "--host", "0.0.0.0", "--state", state]) == 2
    assert re.search(r"--host 0.0.0.0 is reachable from other machines", capsys.readouterr().err)
    assert main(["serve", str(tmp_path), "--host", "0.0.0.0", "--token", "abc", "--state", state]) == 2
    assert re.search(r"the token has 3 characters", capsys.readouterr().err)
    busy = listen("127.0.0.1", 0)
    try:
        port = busy.getsockname()[1]
        with pytest.raises(RlvitalsError, match=rf"cannot listen on 127.0.0.1:{port} .*choose another --port"):
            listen("127.0.0.1", port)
        assert main(["serve", str(tmp_path), "--port", str(port), "--state", state]) == 2
        assert re.search(r"cannot listen on", capsys.readouterr().err)
    finally:
        busy.close()


@pytest.mark.process
def test_cli_serves_until_interrupted(tmp_path: Path) -> None:
    import urllib.request

    log = tmp_path / "grpo.jsonl"
    _write(log, Scenario(steps=40), 0, 40)
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.Popen([sys.executable, "-m", "rlvitals", "serve", str(log), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
        assert url is not None, line + (proc.stderr.read() if proc.stderr else "")
        with urllib.request.urlopen(url.group(1) + "openapi.json", timeout=10) as r:
            assert r.status == 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # killed, so its pipes do not leak into the next test
            proc.kill()
            _, err = proc.communicate()
            err = "did not stop within 60 s of SIGINT\n" + err
    assert proc.returncode == 0, err
    assert (tmp_path / "state" / "rlvitals" / "serve.sqlite").exists()


# --- nested run folders and rollouts paired with paths -----------------------------------------
def test_runs_in_sub_folders_are_served_with_unique_labels(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name in ("exp1", "exp2"):
        (runs / name).mkdir(parents=True)
        _write(runs / name / "train.jsonl", Scenario(steps=40), 0, 40)
    (runs / "exp2" / "notes.txt").write_text("not a log\n")
    ws = workspace([runs], tmp_path / "s.sqlite")
    ws.poll_once()
    c = TestClient(create_app(ws), base_url=LOCAL)
    listed = c.get("/api/runs").json()
    assert sorted(r["label"] for r in listed["runs"]) == ["exp1/train.jsonl", "exp2/train.jsonl"]
    assert listed["messages"] == [f"serve: in {runs.resolve()}: 1 other file is not a log"]  # notes.txt
    index = c.get("/").text
    # the names may wrap at their separators in a narrow column
    assert ">exp1/<wbr>train.<wbr>jsonl</a>" in index and ">exp2/<wbr>train.<wbr>jsonl</a>" in index
    rid = run_id(str((runs / "exp2" / "train.jsonl").resolve()))
    assert c.get(f"/api/runs/{rid}/page").json()["runs"][0]["label"] == "exp2/train.jsonl"
    ws.close()


def test_a_folder_with_no_log_says_so(tmp_path: Path) -> None:
    (tmp_path / "runs" / "exp1").mkdir(parents=True)
    ws = workspace([tmp_path / "runs"], tmp_path / "s.sqlite")
    ws.poll_once()
    assert ws.messages == [f"serve: no training log found yet in {(tmp_path / 'runs').resolve()} or its sub-folders "
                           "(4 levels deep); logs written there later are picked up"]
    ws.close()


def test_rollouts_join_the_run_of_their_own_path_only(tmp_path: Path) -> None:
    write_dump(tmp_path / "dump")
    other = tmp_path / "grpo.jsonl"
    _write(other, Scenario(steps=40), 0, 40)
    ws = workspace([REAL / QWEN, other], tmp_path / "s.sqlite", rollouts=(tmp_path / "dump", None))
    ws.poll_once()
    c = TestClient(create_app(ws), base_url=LOCAL)
    qwen, grpo = run_id(str((REAL / QWEN).resolve())), run_id(str(other.resolve()))
    assert "pass@1" in c.get(f"/api/runs/{qwen}").json()["metrics"]
    assert "pass@1" not in c.get(f"/api/runs/{grpo}").json()["metrics"]
    assert c.get(f"/api/runs/{qwen}/rollouts", params={"step": 16}).status_code == 200
    assert c.get(f"/api/runs/{grpo}/rollouts", params={"step": 16}).status_code == 404
    assert c.get(f"/api/runs/{grpo}/page").json()["rollouts"] is None
    ws.close()


def test_one_rollout_folder_for_several_paths_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    with pytest.raises(RlvitalsError, match=r"serve: one rollout folder for 2 paths would join the same rollouts to "
                                            r"every run; give --rollouts once per PATH"):
        workspace([a, b], tmp_path / "s.sqlite", rollouts=tmp_path / "dump")
    with pytest.raises(RlvitalsError, match=r"serve: 2 paths but 1 rollout folders; give --rollouts once per PATH"):
        workspace([a, b], tmp_path / "s.sqlite", rollouts=(tmp_path / "dump",))
    err = io.StringIO()
    code = main(["serve", str(a), str(b), "--rollouts", str(tmp_path / "dump"), "--state", str(tmp_path / "s2")],
                out=io.StringIO(), err=err)
    assert code == 2 and err.getvalue() == (
        "rlvitals: 2 paths given but 1 --rollouts; the rollouts of one run are not another's: give --rollouts once "
        "per PATH, in the order of the paths ('-' for a path without rollouts)\n")


def test_a_folder_of_several_runs_does_not_share_one_rollout_folder(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name in ("exp1", "exp2"):
        (runs / name).mkdir(parents=True)
        _write(runs / name / "train.jsonl", Scenario(steps=30), 0, 30)
    write_dump(runs / "exp1" / "rollout_data")
    ws = workspace([runs], tmp_path / "s.sqlite", rollouts=runs / "exp1" / "rollout_data")
    ws.poll_once()
    summaries = ws.summaries()
    assert len(summaries) == 2  # the dump's JSONL files are rollouts, not runs
    assert all("pass@1" not in ws.get(s["id"]).run.metrics for s in summaries)
    assert any("serves several runs, so its rollouts are joined to none of them" in m for m in ws.messages)
    ws.close()


def test_a_fifo_in_a_served_folder_is_said_and_never_opened(tmp_path: Path) -> None:
    import os
    import threading

    folder = tmp_path / "runs"
    folder.mkdir()
    _write(folder / "run.jsonl", Scenario(steps=40), 0, 40)
    os.mkfifo(folder / "pipe.log")
    ws = workspace([folder], tmp_path / "serve.sqlite")
    scan = threading.Thread(target=ws.poll_once, daemon=True)  # opening the FIFO would block this forever
    scan.start()
    scan.join(60)
    assert not scan.is_alive(), "the scan blocked on the FIFO"
    assert [s["path"] for s in ws.summaries()] == [str(folder / "run.jsonl")]
    assert f"serve: {folder / 'pipe.log'}: a FIFO, not a log file; it was not opened" in ws.messages
    ws.close()


def test_an_unreadable_log_is_listed_with_its_error_beside_the_readable_runs(tmp_path: Path) -> None:
    """A served folder holding a healthy log and a trainer_state.json cut in half: the healthy run is
    shown as always, and the broken file is listed as unreadable, with the reader's error, in the page and
    in the API (which keeps to its schema)."""
    folder = tmp_path / "runs"
    (folder / "good").mkdir(parents=True)
    _write(folder / "good" / "metrics.jsonl", Scenario(steps=40), 0, 40)
    broken = folder / "broken" / "trainer_state.json"
    broken.parent.mkdir()
    broken.write_text('{"log_history": [{"loss": 0.5, "step": 1}, {"loss": 0.4, "st')
    ws = workspace([folder], tmp_path / "state.sqlite")
    ws.poll_once()
    listed = {("broken" if "broken" in r["path"] else "good"): r for r in ws.summaries()}
    assert len(ws.summaries()) == 2 and listed["good"]["status"] == "ready" and listed["good"]["error"] is None
    bad = listed["broken"]
    assert bad["status"] == "unreadable" and bad["error"].startswith(f"{broken}:1:")
    assert "not valid JSON" in bad["error"]
    client = TestClient(create_app(ws), base_url=LOCAL)
    body = client.get("/api/runs").json()
    assert RunList.model_validate(body) and {r["status"] for r in body["runs"]} == {"ready", "unreadable"}
    page = client.get("/").text
    assert "Could not be read:" in page and html.escape(bad["error"]) in page
    assert f'href="/runs/{bad["id"]}"' not in page  # no page to open
    broken.write_text('{"log_history": [{"loss": 0.5, "step": 1}]}')  # fixed: it becomes a run like the others
    ws.clock.now += 60  # type: ignore[attr-defined]
    ws.poll_once()
    [fixed] = [r for r in ws.summaries() if "broken" in r["path"]]
    assert fixed["status"] == "ready" and fixed["error"] is None
    ws.close()
