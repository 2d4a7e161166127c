"""Golden outputs: the terminal diagnosis, Markdown (en, zh) and JSON of two real runs, byte for byte.

They pin what a user sees so that moving code around cannot change it unnoticed. When an output is
meant to change, regenerate with ``RLVITALS_REGOLD=1 pytest tests/test_golden.py`` and read the diff
before committing it.
"""

from __future__ import annotations

import io
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
    assert out.getvalue() == golden.read_text(encoding="utf-8")
