"""The checks of a run judged side by side in threads give what one thread gives: the same findings, in
the same order, word for word, on every real log; and several threads really do judge at once."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from conftest import REAL

import rlvitals
from rlvitals.checks import Outcome, load_checks
from rlvitals.diagnosis import MAX_THREADS, Diagnosis, diagnose

LOGS = sorted(p.name for p in REAL.iterdir() if p.suffix in (".log", ".csv", ".json"))


def _said(d: Diagnosis) -> bytes:
    return orjson.dumps(d.to_json(), option=orjson.OPT_SERIALIZE_NUMPY)


@pytest.mark.parametrize("name", LOGS)
def test_threads_judge_a_real_log_as_one_thread_does(real: Path, name: str) -> None:
    run = rlvitals.load(real / name)[0]
    one = _said(diagnose(run, threads=1))
    assert _said(diagnose(run, threads=2)) == one
    assert _said(diagnose(run, threads=MAX_THREADS)) == one


def test_several_threads_judge_at_once(real: Path) -> None:
    """Each check waits until a second thread is judging too (a minute at most): one thread judging the
    checks in turn would have every check time out and say so."""
    seen: set[int] = set()
    both = threading.Event()
    lock = threading.Lock()

    def wait_for_company(view: object, params: object) -> list[Outcome]:
        with lock:
            seen.add(threading.get_ident())
            if len(seen) >= 2:
                both.set()
        return [Outcome("ok" if both.wait(60) else "warn", "ok")]

    checks = [replace(c, fn=wait_for_company, needs=(), families=()) for c in load_checks()[:4]]
    run = rlvitals.load(real / LOGS[0])[0]
    d = diagnose(run, checks=checks, threads=2)
    assert [f.status for f in d.findings] == ["ok"] * 4
    assert len(seen) == 2
