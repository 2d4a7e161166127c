"""The dashboard's comparison routes over two real corpus runs: /compare?runs=A,B serves the report of both
(its comparison section with the final/best table and the config diff), /api/compare the same tables as JSON;
fewer than two ids is a 400 saying to pick two or more (a 422 from the API, whose schema says so), an unknown
id a 404 naming it; the run list carries a
tick and the words a filter reads per run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from report.test_compare import COLLAPSE, DIFFERING, HEALTHY

from rlvitals.server import ServeState, Workspace, WorkspaceOptions, run_id
from rlvitals.server.app import create_app
from rlvitals.server.compare import compare_ids
from rlvitals.server.security import AccessError

IDS = [run_id(str(p.resolve() / "output.log")) for p in (HEALTHY, COLLAPSE)]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    ws = Workspace([HEALTHY.resolve(), COLLAPSE.resolve()],
                   ServeState(Path(tmp_path_factory.mktemp("state")) / "s.sqlite"), WorkspaceOptions(interval=0.2))
    ws.poll_once()
    yield TestClient(create_app(ws), base_url="http://127.0.0.1")
    ws.close()


def test_the_comparison_page_is_the_report_of_both_runs(client: TestClient) -> None:
    page = client.get("/compare?runs=" + ",".join(IDS))
    assert page.status_code == 200
    html = page.text
    assert f'data-runs="{IDS[0]},{IDS[1]}"' in html and '<script src="/static/compare.js"></script>' in html
    assert html.count('<tr data-run="r') == 2 and 'id="rlv-compare-table"' in html
    for key in DIFFERING:
        assert f'<tr data-key="{key}">' in html
    assert client.get("/static/compare.js").status_code == 200


def test_the_api_gives_the_tables_as_json(client: TestClient) -> None:
    got = client.get("/api/compare", params={"runs": ",".join(IDS)}).json()
    assert got["runs"] == IDS
    assert {r["key"]: r["values"] for r in got["config"]["rows"]} == DIFFERING
    reward = next(r for r in got["rows"] if r["keys"] == ["critic/score/mean"])
    assert [(c["best"], c["best_step"]) for c in reward["cells"]] == [
        (pytest.approx(0.15958333015441895), 139), (pytest.approx(-0.4999999701976776), 5)]


@pytest.mark.parametrize("runs", ["", IDS[0], f"{IDS[0]},", " , "])
def test_fewer_than_two_runs_is_refused_saying_to_pick_two(client: TestClient, runs: str) -> None:
    answer = client.get("/compare", params={"runs": runs})
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("compare: pick two or more runs to compare")
    with pytest.raises(AccessError, match=r"pick two or more runs to compare \(got \d"):
        compare_ids(runs)
    # the API's schema says it takes two or more ids: FastAPI refuses anything else by that pattern
    assert client.get("/api/compare", params={"runs": runs}).status_code == 422


def test_a_run_named_twice_is_compared_with_itself(client: TestClient) -> None:
    got = client.get("/api/compare", params={"runs": f"{IDS[0]},{IDS[0]}"}).json()
    assert got["runs"] == [IDS[0], IDS[0]] and got["config"]["rows"] == []


def test_an_unknown_id_is_refused_by_name(client: TestClient) -> None:
    for path in ("/compare", "/api/compare"):
        answer = client.get(path, params={"runs": f"{IDS[0]},0000beef"})
        assert answer.status_code == 404
        assert answer.json()["detail"].startswith("compare: no run '0000beef' in this workspace")


def test_the_run_list_has_a_tick_and_the_words_to_filter_each_run(client: TestClient) -> None:
    html = client.get("/").text
    assert 'id="rlv-filter"' in html and 'id="rlv-compare" disabled' in html
    for rid in IDS:
        assert f'<input type="checkbox" class="rlv-pick" value="{rid}"' in html
    row = html[html.index(f'<tr data-run="{IDS[1]}"'):]
    search = row[row.index('data-search="') + 13:].split('"')[0]
    assert "length-collapse" in search and "fail" in search and "grpo" in search and "verl" in search
