"""Where the labelled corpus runs are (benchmarks/corpus/runs/<id>/), for reader tests on real logs.

A test asks for a run's file by the run's id; it is skipped when the corpus is not there. A
``fixture:<name>`` input is one of the real logs in tests/fixtures/real/.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "benchmarks" / "corpus" / "runs"
REAL = ROOT / "tests" / "fixtures" / "real"


def corpus_input(run_id: str) -> Path:
    """The input its labels name (``[run] input``) of corpus run ``run_id``; skips when the corpus is absent."""
    folder = CORPUS / run_id
    labels = folder / "labels.toml"
    if not labels.is_file():
        pytest.skip(f"corpus run {run_id} not found at {folder}")
    name = tomllib.loads(labels.read_text(encoding="utf-8"))["run"]["input"]
    return REAL / name.removeprefix("fixture:") if name.startswith("fixture:") else folder / name


def corpus_labels(run_id: str) -> dict[str, object]:
    """The ``[run]`` table of a corpus run's labels (what a careful reader counted)."""
    corpus_input(run_id)
    table: dict[str, object] = tomllib.loads((CORPUS / run_id / "labels.toml").read_text(encoding="utf-8"))["run"]
    return table
