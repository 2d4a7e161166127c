"""docs/json.md defines every key of ``rlvitals diagnose --json``, and only those.

The keys come from running the CLI on every real fixture (and on one with ``--rollouts``), so a key
someone adds to ``Diagnosis.to_json`` fails here until the doc defines it, and a key the code drops
fails here until the doc drops it. The statuses, the layers and the export encoding the doc lists
are checked against the code too.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any, get_args

import orjson
import pytest
from browser import REAL_LOGS
from conftest import REAL
from report.test_model import write_dump

from rlvitals.checks._base import Status
from rlvitals.cli import main
from rlvitals.diagnosis import READING_ORDER
from rlvitals.export import STATUS_VALUE

DOC = Path(__file__).resolve().parents[1] / "docs" / "json.md"
QWEN = "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log"


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def documented(title: str) -> set[str]:
    """The keys of a section's table: rows whose first cell is one backticked word."""
    return set(re.findall(r"^\| `([^`]+)` \|", _section(title), flags=re.MULTILINE))


def _diagnose(*argv: str) -> list[dict[str, Any]]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["diagnose", "--json", *argv], out=out, err=err)
    assert code == 0, err.getvalue()
    runs: list[dict[str, Any]] = orjson.loads(out.getvalue())["runs"]
    return runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    dump = tmp_path_factory.mktemp("json") / "dump"
    write_dump(dump)
    joined = _diagnose("--rollouts", str(dump), str(REAL / QWEN))
    return [*_diagnose(*(str(REAL / name) for name in REAL_LOGS)), *joined]


def test_every_run_key_is_documented(runs: list[dict[str, Any]]) -> None:
    seen = set().union(*(run.keys() for run in runs))
    assert seen == documented("Run keys")
    assert all(set(run) | {"rollouts"} == seen for run in runs)  # only rollouts is optional
    assert {r["path"].rsplit("/", 1)[-1] for r in runs} == set(REAL_LOGS)


def test_every_layer_and_count_key_is_documented(runs: list[dict[str, Any]]) -> None:
    for run in runs:
        assert list(run["layers"]) == list(READING_ORDER)
        for layer in run["layers"].values():
            assert set(layer) == documented("Layer keys")
            assert set(layer["counts"]) == documented("Counts keys")
    assert "`" + "`, `".join(READING_ORDER) + "`" in _section("Run keys")


def test_every_finding_key_is_documented(runs: list[dict[str, Any]]) -> None:
    keys = documented("Finding keys")
    findings = [f for run in runs for f in run["findings"]]
    assert len(findings) > 300
    for f in findings:
        assert set(f) == keys, f["check"]
        assert set(f["title"]) == set(f["message"]) == set(f["advice"]) == {"en", "zh"}
        assert isinstance(f["points"], list) and (f["span"] is None or len(f["span"]) == 2)


def test_every_headline_and_moment_key_is_documented(runs: list[dict[str, Any]]) -> None:
    told = [run for run in runs if run["headline"] is not None]
    assert told and any(run["headline"] is None for run in runs)  # the real logs hold both kinds
    for run in runs:
        alarms = [f for f in run["findings"] if f["status"] in ("warn", "fail")]
        assert len(run["timeline"]) == len(alarms) and (run["headline"] is None) == (not alarms)
        for moment in run["timeline"]:
            assert set(moment) == documented("Moment keys")
            assert (moment["caused_by"] is None) == (moment["because"] is None)
        assert [m["step"] for m in run["timeline"]] == sorted(m["step"] for m in run["timeline"])
    for run in told:
        head = run["headline"]
        assert set(head) == documented("Headline keys")
        assert set(head["title"]) == set(head["message"]) == set(head["advice"]) == {"en", "zh"}
        roots = [m for m in run["timeline"] if m["caused_by"] is None]
        assert head["check"] in {m["check"] for m in roots}


def test_the_rollouts_keys_are_documented(runs: list[dict[str, Any]]) -> None:
    (joined,) = [run for run in runs if "rollouts" in run]
    assert set(joined["rollouts"]) == documented("Rollouts keys")


def test_statuses_verdicts_and_counts_agree_with_the_doc(runs: list[dict[str, Any]]) -> None:
    assert documented("Statuses") == set(get_args(Status)) == documented("Counts keys")
    statuses = {f["status"] for run in runs for f in run["findings"]}
    assert {"warn", "note", "ok", "skipped"} <= statuses <= set(get_args(Status))  # the deepseek logs' MFU: a note
    for run in runs:
        verdicts = [run["verdict"], *(layer["verdict"] for layer in run["layers"].values())]
        assert "note" not in verdicts
        for lid, layer in run["layers"].items():
            mine = [f["status"] for f in run["findings"] if f["layer"] == lid]
            assert layer["counts"] == {s: mine.count(s) for s in layer["counts"]}


def test_the_export_encoding_is_the_documented_one() -> None:
    rows = re.findall(r"^\| `(\w+)` \| ([\d.]+) \|$", _section("Statuses as numbers (exports)"), flags=re.MULTILINE)
    assert {s: float(v) for s, v in rows} == STATUS_VALUE


def test_every_forecast_key_is_documented(runs: list[dict[str, Any]]) -> None:
    keys = documented("Forecast keys")
    forecasts = [run["forecast"] for run in runs]
    held = [f for f in forecasts if f["ceiling"] is not None]
    declined = [f for f in forecasts if f["ceiling"] is None]
    assert held and declined  # the real logs hold both kinds
    for f in forecasts:
        assert set(f) == keys
        for one in f["by_metric"]:
            assert set(one) == keys - {"target", "below_target", "by_metric"}
