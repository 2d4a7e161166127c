"""Per-data-source pass@1, mean score and gap to the in-distribution sources: a plain-loop reference,
sharded = unsharded, the analysis and the CLI (--id-source / --ood-source)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import rlvitals
from rlvitals.cli import main
from rlvitals.rollout import by_source

SOURCES = ["openai/gsm8k", "math", "ood/aime", None]


def _table(seed: int, n: int = 80, correct: bool = True) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    score = rng.choice([0.0, 1.0, 0.5, float("nan"), None], n).tolist()
    cols: dict[str, Any] = {"step": rng.integers(1, 4, n), "group": [f"g{i // 4}" for i in range(n)],
                            "source": rng.choice(np.array(SOURCES, dtype=object), n).tolist(), "score": score}
    if correct:
        cols["correct"] = [None if v < 0.2 else bool(v < 0.6) for v in rng.random(n)]
    return pl.DataFrame(cols, schema_overrides={"score": pl.Float64, "correct": pl.Boolean})


def _is_correct(row: dict[str, Any]) -> bool | None:
    """The group family's rule, written out: the flag as it is when the table has the column, else
    score >= 1; None (unknown, left out — never wrong) for a null flag, or a null or NaN score."""
    if "correct" in row:
        return None if row["correct"] is None else bool(row["correct"])
    s = row.get("score")
    return None if s is None or math.isnan(s) else s >= 1.0


def _pass(rows: list[dict[str, Any]]) -> float | None:
    known = [ok for ok in map(_is_correct, rows) if ok is not None]
    return sum(known) / len(known) if known else None


def plain(df: pl.DataFrame, id_sources: tuple[str, ...]) -> dict[tuple[int, str], dict[str, float | None]]:
    rows = df.to_dicts()
    out: dict[tuple[int, str], dict[str, float | None]] = {}
    names = sorted({r["source"] for r in rows if r["source"] is not None})
    for step in sorted({r["step"] for r in rows if r["source"] is not None}):
        ids = [r for r in rows if r["step"] == step and r["source"] in id_sources]
        id_pass = _pass(ids)
        for name in names:
            mine = [r for r in rows if r["step"] == step and r["source"] == name]
            p1 = _pass(mine)
            scores = [r["score"] for r in mine if r["score"] is not None and math.isfinite(r["score"])]
            out[step, name] = {"pass@1": p1, "score/mean": sum(scores) / len(scores) if scores else None,
                               "id_gap": None if p1 is None or id_pass is None else id_pass - p1}
    return out


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), ids=st.sampled_from([(), ("math",), ("openai/gsm8k", "math")]),
       correct=st.booleans())
def test_matches_a_plain_loop(seed: int, ids: tuple[str, ...], correct: bool) -> None:
    df = _table(seed, correct=correct)
    got = by_source.compute(by_source.update(None, df, id_sources=ids))
    want = plain(df, ids)
    assert got["step"].to_list() == sorted({s for s, _ in want})
    for row in got.iter_rows(named=True):
        for key, value in row.items():
            if key == "step":
                continue
            parts = by_source.split_key(key)
            assert parts is not None and (parts[1] != "id_gap" or ids), key
            ref = want[row["step"], parts[0]][parts[1]]
            assert value == (None if ref is None else pytest.approx(ref, abs=1e-12)), key


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), shards=st.integers(2, 5))
def test_sharded_equals_unsharded_exactly(seed: int, shards: int) -> None:
    df = _table(seed)
    part = np.random.default_rng(seed + 1).integers(0, shards, df.height)
    states = [by_source.update(None, df.filter(pl.Series(part == i)), id_sources=["math"]) for i in range(shards)]
    merged = states[0]
    for s in reversed(states[1:]):
        merged = by_source.merge(s, merged)
    whole = by_source.compute(by_source.update(None, df, id_sources=["math"]))
    assert_frame_equal(by_source.compute(merged), whole, check_exact=True)


def test_needs_and_errors() -> None:
    df = _table(0)
    with pytest.raises(ValueError, match=r"need the rollout column\(s\) \['source'\] \(veRL's data_source"):
        by_source.update(None, df.drop("source"))
    with pytest.raises(ValueError, match=r"need a 'score' or a 'correct' column"):
        by_source.update(None, df.drop("score", "correct"))
    with pytest.raises(ValueError, match=r"id_sources \('a',\) differ from the state's \(\)"):
        by_source.update(by_source.update(None, df), df, id_sources=["a"])
    with pytest.raises(ValueError, match=r"different id_sources: \(\) vs \('a',\)"):
        by_source.merge(by_source.update(None, df), by_source.update(None, df, id_sources=["a"]))
    assert by_source.split_key("source//pass@1") is None
    table = pl.DataFrame({"step": [1, 1], "source": ["", "a"], "score": [1.0, 0]})
    empty = by_source.compute(by_source.update(None, table))
    assert empty.columns == ["step", "source/a/pass@1", "source/a/score/mean"]
    assert by_source.split_key("source/pass@1") is None and by_source.split_key("source/x/other") is None


def _rows() -> list[dict[str, Any]]:
    """Step 1: gsm8k 3/4 right, math 1/4, aime 0/2; step 2: gsm8k 4/4, aime 1/2."""
    spec = {1: {"openai/gsm8k": (3, 4), "math": (1, 4), "aime": (0, 2)}, 2: {"openai/gsm8k": (4, 4), "aime": (1, 2)}}
    rows = []
    for step, per in spec.items():
        for name, (c, n) in per.items():
            rows += [{"step": step, "prompt": f"{name} q", "response": str(i), "score": float(i < c),
                      "data_source": name} for i in range(n)]
    return rows


def test_analysis_per_step_overall_json_and_the_id_ood_gap(tmp_path: Path) -> None:
    rows = _rows()
    a = rlvitals.analyze_rollouts(rows, ks=(1,), columns=rlvitals_columns(), id_sources=["openai/gsm8k"])
    s1, s2 = a.steps.row(0, named=True), a.steps.row(1, named=True)
    assert (s1["source/openai/gsm8k/pass@1"], s1["source/math/pass@1"], s1["source/aime/pass@1"]) == (0.75, 0.25, 0.0)
    assert (s1["source/math/id_gap"], s1["source/aime/id_gap"], s1["source/openai/gsm8k/id_gap"]) == (0.5, 0.75, 0.0)
    assert s2["source/math/pass@1"] is None and s2["source/aime/id_gap"] == 0.5
    # val/id_ood_gap now comes from the sources: ID gsm8k 0.75 - OOD (math + aime) 1/6
    assert s1["val/id_ood_gap"] == pytest.approx(0.75 - 1 / 6)
    assert a.overall["source/aime/id_gap"] == pytest.approx(7 / 8 - 1 / 4)
    assert not any(s.startswith(("source", "id_ood")) for s in a.skipped)
    only = rlvitals.analyze_rollouts(rows, ks=(1,), columns=rlvitals_columns(), id_sources=["openai/gsm8k"],
                                     ood_sources=["aime"])
    assert only.steps["val/id_ood_gap"][0] == 0.75
    plain_ = rlvitals.analyze_rollouts(rows, ks=(1,), columns=rlvitals_columns())
    assert "source/math/id_gap" not in plain_.steps.columns and plain_.steps["source/math/pass@1"][0] == 0.25
    assert "source/{source}/id_gap: needs the in-distribution data sources: --id-source NAME" in plain_.skipped
    typo = rlvitals.analyze_rollouts(rows, ks=(1,), columns=rlvitals_columns(), id_sources=["gsm8K"])
    assert ("the in-distribution source(s) ['gsm8K'] are not among the rollouts' sources "
            "['aime', 'math', 'openai/gsm8k']") in typo.notes
    path = tmp_path / "by_source.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, err = io.StringIO(), io.StringIO()
    argv = ["rollouts", "--json", "--k", "1", "--source", "data_source", "--prompt", "prompt", "--response",
            "response", "--score", "score", "--step", "step", "--id-source", "openai/gsm8k", str(path)]
    assert main(argv, out=out, err=err) == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    assert doc["steps"][0]["sources"]["math"] == {"pass@1": 0.25, "score/mean": 0.25, "id_gap": 0.5}
    assert list(doc["steps"][0]["sources"]) == ["aime", "math", "openai/gsm8k"]
    assert "math" not in doc["steps"][1]["sources"]
    assert not any(k.startswith("source/") for k in doc["steps"][0]["metrics"])
    assert doc["overall"]["sources"]["aime"]["pass@1"] == 0.25


def rlvitals_columns() -> Any:
    from rlvitals.rollout.readers import ColumnMap

    return ColumnMap(step="step", prompt="prompt", response="response", score="score", source="data_source")


def test_bad_source_options() -> None:
    with pytest.raises(ValueError, match=r"ood_sources \('a',\) need id_sources"):
        rlvitals.analyze_rollouts(_rows(), ood_sources=["a"])
    with pytest.raises(ValueError, match=r"the data source\(s\) \['a'\] are given as both in- and out-of-distribution"):
        rlvitals.analyze_rollouts(_rows(), id_sources=["a", "b"], ood_sources=["a"])
    with pytest.raises(ValueError, match=r"id_sources must be a list of data-source names, got 'math'"):
        rlvitals.analyze_rollouts(_rows(), id_sources="math")
    err = io.StringIO()
    assert main(["rollouts", "--ood-source", "x", "nowhere"], io.StringIO(), err) == 2
    assert err.getvalue() == ("rlvitals: --ood-source needs --id-source: the gap is in-distribution minus "
                              "out-of-distribution\n")
