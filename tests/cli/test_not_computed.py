"""``rlvitals rollouts``: the rollout metrics not computed folded into one line that fits the terminal,
every one with its whole reason under ``--verbose``; ``--json`` keeps the whole list either way."""

from __future__ import annotations

import io
import json
from pathlib import Path

from report.test_rollout_browser import write_dump

from rlvitals.cli import main
from rlvitals.render.console import WIDTH
from rlvitals.render.not_computed import fold_not_computed, short_reason


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def test_one_line_by_default_and_every_reason_with_verbose(tmp_path: Path) -> None:
    write_dump(tmp_path / "dump")
    code, out, err = _cli("rollouts", "--json", str(tmp_path / "dump"))
    reasons = json.loads(out)["not_computed"]
    assert code == 0 and len(reasons) > 3, err
    code, out, _ = _cli("rollouts", str(tmp_path / "dump"))
    folded = [line for line in out.splitlines() if "not computed" in line]
    assert code == 0 and len(folded) == 1 and len(folded[0]) <= WIDTH
    assert folded[0].startswith(f"  not computed: {len(reasons)} metric families or keys (")
    assert folded[0].endswith(" more) — --verbose lists them")
    assert not any(r in out for r in reasons)  # no reason is printed whole
    code, out, _ = _cli("rollouts", "--verbose", str(tmp_path / "dump"))
    flat = " ".join(out.split())
    assert code == 0 and f"not computed ({len(reasons)}):" in out and "--verbose lists them" not in out
    assert all(" ".join(r.split()) in flat for r in reasons)


def test_fold_fits_the_width_and_counts_what_it_leaves_out() -> None:
    lines = [f"family{i}: needs the rollout column 'c{i}' (a hint); the table has ['step']" for i in range(6)]
    for width in (90, 120, 200):  # 90: the count, one cut reason and the pointer
        got = fold_not_computed(lines, width)
        assert len(got) <= width and got.startswith("  not computed: 6 metric families or keys (family0: ")
    assert "… " not in fold_not_computed(lines, 400) and "family5: needs the rollout column 'c5')" in \
        fold_not_computed(lines, 400)
    assert fold_not_computed(lines[:1], 20).endswith("…) — --verbose lists them")
    assert fold_not_computed([]) == ""
    assert short_reason(lines[0]) == "family0: needs the rollout column 'c0'"
    zh = fold_not_computed(lines, 80, "zh")
    assert zh.startswith("  有 6 项指标没有算出（英文原文：family0: ") and zh.endswith("；加 --verbose 可查看全部原因")
