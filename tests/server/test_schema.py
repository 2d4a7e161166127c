"""The dashboard's API against its own OpenAPI document, with schemathesis: requests generated from
the schema (path parameters, query ranges, languages, sequence numbers, run ids that exist and ones
that do not) are sent to the real app; no answer is a server error, and every answer the schema
describes matches it (status, content type, body).

Two real runs are served (a veRL JSONL log from the simulator and the TRL UnslothGRPO
trainer_state.json), so the routes of an existing run are reached too: their ids are the schema's
examples.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from conftest import REAL
from hypothesis import HealthCheck, given, settings

from rlvitals.server import ServeState, Workspace, WorkspaceOptions, create_app
from rlvitals.synthetic.simulate import Scenario, jsonl_lines

schemathesis = pytest.importorskip("schemathesis")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("served")
    (folder / "verl").mkdir()
    (folder / "verl" / "metrics.jsonl").write_bytes(b"".join(x + b"\n" for x in jsonl_lines(Scenario(steps=120))))
    (folder / "trl").mkdir()
    shutil.copyfile(REAL / "trl__UnslothGRPO__checkpoint-250_trainer_state.json", folder / "trl" / "trainer_state.json")
    ws = Workspace([folder], ServeState(tmp_path_factory.mktemp("state") / "serve.sqlite"), WorkspaceOptions(),
                   clock=Clock())
    ws.poll_once()
    app = create_app(ws, hosts=("testserver",))
    yield app, [s["id"] for s in ws.summaries()]
    ws.close()


@pytest.fixture(scope="module")
def api(served: Any) -> Any:
    app, ids = served
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    return schema, ids


def test_the_served_runs_are_there(api: Any) -> None:
    _, ids = api
    assert len(ids) == 2


def test_no_request_the_schema_allows_makes_a_server_error(api: Any) -> None:
    """Every operation, 40 generated requests each; half of those naming a run name one that exists, so
    each run route answers 200 at least once (and every answer is checked against the schema)."""
    schema, ids = api
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 9
    statuses: dict[str, set[int]] = {}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def one(case: Any) -> None:
            rid = (case.path_parameters or {}).get("rid")
            if rid is not None and len(rid) % 2 == 0:
                case.path_parameters["rid"] = ids[len(rid) // 2 % len(ids)]
            response = case.call_and_validate()
            statuses.setdefault(case.path, set()).add(response.status_code)

        one()
    answered = {path for path, seen in statuses.items() if 200 in seen}
    assert {"/api/runs", "/api/runs/{rid}", "/api/runs/{rid}/findings", "/api/runs/{rid}/page",
            "/api/events", "/api/roots"} <= answered, statuses
