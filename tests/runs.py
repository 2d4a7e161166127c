"""Build Runs from plain arrays for check tests (through the real RunBuilder and catalog)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rlvitals.ingest import Record, SourceMeta
from rlvitals.run.builder import RunBuilder
from rlvitals.run.run import Run


def make_run(series: Mapping[str, Sequence[float] | np.ndarray], *, steps: Sequence[int] | None = None,
             framework: str = "verl", config: Mapping[str, Any] | None = None, path: str = "synthetic") -> Run:
    """A Run whose canonical (or raw) keys hold the given arrays at steps 1..N (or ``steps``).
    A NaN in an array means "not logged at that step" unless the key ends with ``!nan``, which
    logs a real NaN (``{"actor/pg_loss!nan": [...]}``)."""
    n = max(len(v) for v in series.values())
    steps = list(steps) if steps is not None else list(range(1, n + 1))
    meta = SourceMeta(format="synthetic", framework=framework, config=dict(config or {}))
    builder = RunBuilder(meta)
    for i, step in enumerate(steps):
        values: dict[str, float] = {}
        for key, arr in series.items():
            if i >= len(arr):
                continue
            v = float(arr[i])
            if key.endswith("!nan"):
                values[key[:-4]] = v
            elif not math.isnan(v):
                values[key] = v
        if values:
            builder.add(Record(step, values, f"{path}:{i + 1}"))
    return builder.finish(path)


def finding(diagnosis: Any, check: str) -> Any:
    """The single finding of ``check`` (fails the test if there are several or none)."""
    found = [f for f in diagnosis.findings if f.check == check]
    assert len(found) == 1, (check, [(f.status, f.message["en"]) for f in found])
    return found[0]


#: the labelled corpus of real public runs (benchmarks/corpus/README.md); committed with the project
CORPUS = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus" / "runs"


def corpus_input(run_id: str) -> Path:
    """What to hand to rlvitals for a corpus run: its label's ``input`` (``fixture:<name>``: in
    tests/fixtures/real/)."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    label = tomllib.loads((CORPUS / run_id / "labels.toml").read_text(encoding="utf-8"))
    name = str(label["run"]["input"])
    if name.startswith("fixture:"):
        return Path(__file__).resolve().parent / "fixtures" / "real" / name.removeprefix("fixture:")
    return CORPUS / run_id / name


def corpus_run(run_id: str) -> Run:
    """The first run of a corpus run's input, read by rlvitals.load."""
    import rlvitals

    return rlvitals.load(corpus_input(run_id))[0]
