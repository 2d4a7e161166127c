"""Where the labelled corpus runs are (benchmarks/corpus/runs/<id>/), for reader tests on real logs.

A test asks for a run's file by the run's id; it is skipped when the corpus (or the shared fixture a
``shared:`` input names, from ../shared beside the clone) is not there.
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
SHARED_REAL = ROOT.parent / "shared" / "fixtures" / "real"


def corpus_input(run_id: str) -> Path:
    """The input its labels name (``[run] input``) of corpus run ``run_id``; skips when absent."""
    folder = CORPUS / run_id
    labels = folder / "labels.toml"
    if not labels.is_file():
        pytest.skip(f"corpus run {run_id} not found at {folder}")
    name = tomllib.loads(labels.read_text(encoding="utf-8"))["run"]["input"]
    path = SHARED_REAL / name.removeprefix("shared:") if name.startswith("shared:") else folder / name
    if not path.exists():
        pytest.skip(f"{path} not found (../shared is laid beside the clone in CI)")
    return path


def corpus_labels(run_id: str) -> dict[str, object]:
    """The ``[run]`` table of a corpus run's labels (what a careful reader counted)."""
    corpus_input(run_id)
    table: dict[str, object] = tomllib.loads((CORPUS / run_id / "labels.toml").read_text(encoding="utf-8"))["run"]
    return table
