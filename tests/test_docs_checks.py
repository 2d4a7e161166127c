"""docs/checks.md maps every rule of the specifications to a check: every check it names exists, every check is
named."""

from __future__ import annotations

import re
from pathlib import Path

from rlvitals.checks import load_checks

DOC = Path(__file__).resolve().parents[1] / "docs" / "checks.md"


def test_doc_and_checks_agree() -> None:
    named = set(re.findall(r"`([a-z][a-z_]+)`", DOC.read_text(encoding="utf-8")))
    ids = {c.id for c in load_checks()}
    assert ids <= named, f"checks missing from docs/checks.md: {sorted(ids - named)}"
    # backticked words in the doc that look like check ids but are not
    unknown = {n for n in named - ids if "_" in n and "/" not in n and n not in {"val-core"}}
    assert unknown <= {"rollout_data_dir", "max_response_length"}, sorted(unknown)
