"""Golden outputs: the terminal diagnosis, Markdown (en, zh) and JSON of three real runs, byte for byte — but for
the JSON's fitted numbers, which are compared to 1e-9 relative: a forecast's least-squares fit differs in its
last bits between NumPy/SciPy builds, and a golden that fails on a new wheel says nothing about the code.

They pin what a user sees so that moving code around cannot change it unnoticed. When an output is
meant to change, regenerate with ``RLVITALS_REGOLD=1 pytest tests/test_golden.py`` and read the diff
before committing it.
"""

from __future__ import annotations

import io
import json
import math
import os
from pathlib import Path

import pytest

from rlvitals.cli import main

GOLDEN = Path(__file__).parent / "golden"
CORPUS = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus" / "runs"
RUNS = {
    "verl-grpo": "verl__verl_training_log__grpo_run_deepseek7b_llm.log",
    "trl-state": "trl__UnslothGRPO__checkpoint-250_trainer_state.json",
    # a root cause with its consequences under it: the KL penalty in the reward explodes from step 3-4, the
    # answers shrink to one token, the score, the entropy and the gradient follow (the corpus run's labels)
    "verl-klreward": "verl__agent-opd__qwen3-4b-klreward-length-collapse/output.log",
}
VIEWS = {
    "terminal.txt": ["--all"],
    # the default terminal view: the passed and skipped checks summed up in one line per layer
    "summed.txt": [],
    "brief.txt": ["--brief"],
    "en.md": ["--markdown"],
    "zh.md": ["--markdown", "--lang", "zh"],
    # every passed and skipped check with its words: what --markdown printed before it summed them up
    "all.md": ["--markdown", "--all"],
    "json": ["--json"],
}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("run", RUNS)
def test_output_is_unchanged(real: Path, monkeypatch: pytest.MonkeyPatch, run: str, view: str) -> None:
    # a relative path: the output must not depend on where the clone lies
    folder, name = (CORPUS / RUNS[run]).parent, (CORPUS / RUNS[run]).name
    if "/" not in RUNS[run]:
        folder, name = real, RUNS[run]
    monkeypatch.chdir(folder)
    out, err = io.StringIO(), io.StringIO()
    main(["diagnose", name, *VIEWS[view]], out=out, err=err)
    assert err.getvalue() == ""
    golden = GOLDEN / f"{run}.{view}"
    if os.environ.get("RLVITALS_REGOLD"):
        golden.write_text(out.getvalue(), encoding="utf-8")
    if view == "json":
        assert_same(json.loads(out.getvalue()), json.loads(golden.read_text(encoding="utf-8")))
    else:
        assert out.getvalue() == golden.read_text(encoding="utf-8")


def assert_same(got: object, want: object, where: str = "") -> None:
    """``got`` equals ``want`` exactly in every key, string and integer, and to 1e-9 relative (1e-12
    absolute) in every float."""
    if isinstance(want, float) and isinstance(got, (int, float)):
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), f"{where}: {got!r} != {want!r}"
    elif isinstance(want, dict) and isinstance(got, dict):
        assert list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
        for k in want:
            assert_same(got[k], want[k], f"{where}/{k}")
    elif isinstance(want, list) and isinstance(got, list):
        assert len(got) == len(want), f"{where}: {len(got)} items != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, f"{where}[{i}]")
    else:
        assert got == want and type(got) is type(want), f"{where}: {got!r} != {want!r}"


def test_float_tolerance_is_narrow() -> None:
    assert_same({"a": [1.0, "x"]}, {"a": [1.0 + 1e-12, "x"]})
    for got, want in (({"a": 1.0001}, {"a": 1.0}), ({"a": "1.0"}, {"a": 1.0}), ({"b": 1.0}, {"a": 1.0}),
                      ([1, 2], [1, 2, 3]), (1, 2)):
        with pytest.raises(AssertionError):
            assert_same(got, want)
