"""The votes of a whole table at once: per group, the bits of one maj_curve call on the group's own signature,
whichever way the answers were coded and counted."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from rlvitals.rollout import _votes
from rlvitals.rollout.groups import step_metrics
from rlvitals.rollout.passk import maj_curve


def _reference(gid: list[int], ok: list[int], answers: list[object], groups: int, kmax: int) -> np.ndarray:
    """One maj_curve per group, its signature counted in plain Python (a null answer is a singleton)."""
    out = np.full((groups, kmax), np.nan)
    for g in range(groups):
        tally: dict[object, list[int]] = {}
        members = [i for i in range(len(gid)) if gid[i] == g]
        if not any(answers[i] is not None for i in members):
            continue  # no rollout states an answer: no vote
        for i in members:
            cell = tally.setdefault(("none", i) if answers[i] is None else answers[i], [0, 0])
            cell[0] += 1
            cell[1] += ok[i]
        out[g] = maj_curve(tuple(sorted((m, c) for m, c in tally.values())), kmax)
    return out


def _table(seed: int, groups: int, answers: int, null: float) -> tuple[list[int], list[int], list[object]]:
    rnd = np.random.default_rng(seed)
    gid, ok, ans = [], [], []
    for g in range(groups):
        n = int(rnd.integers(1, 12))
        for _ in range(n):
            a = int(rnd.integers(0, answers))
            gid.append(g)
            ok.append(int(a == 0 or rnd.random() < 0.1))  # mostly: answer 0 is right
            ans.append(None if rnd.random() < null else f"a{a}")
    order = rnd.permutation(len(gid))  # rows in any order
    return [gid[i] for i in order], [ok[i] for i in order], [ans[i] for i in order]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


@pytest.mark.parametrize(("answers", "null"), [(3, 0.1), (6, 0.0), (2, 0.6)])
def test_every_group_is_its_own_maj_curve_bit_for_bit(answers: int, null: float) -> None:
    gid, ok, ans = _table(answers, 400, answers, null)
    got = _votes.maj_matrix(np.array(gid), np.array(ok), pl.Series(ans, dtype=pl.String), 400, 12)
    assert _same(got, _reference(gid, ok, ans, 400, 12))


def test_many_distinct_answers_are_counted_by_one_sort() -> None:
    # 2,000 groups x 6 answers mostly of their own: the grid of groups x answers (~20M) is too large to count in,
    # so the rows are sorted instead; the values must not change
    gid, ok, ans = _table(1, 2000, 10, 0.05)
    ans = [None if a is None else f"{a}-{g % 997}" for a, g in zip(ans, gid, strict=True)]
    codes, distinct = _votes.answer_codes(pl.Series(ans))
    assert 2000 * distinct > 2 * len(gid) + (1 << 16)
    got = _votes.maj_matrix(np.array(gid), np.array(ok), pl.Series(ans), 2000, 8)
    assert _same(got, _reference(gid, ok, ans, 2000, 8))


def test_answers_whose_hashes_collide_are_coded_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    gid, ok, ans = _table(2, 200, 4, 0.1)
    series = pl.Series(ans)
    want = _votes.maj_matrix(np.array(gid), np.array(ok), series, 200, 6)
    monkeypatch.setattr(pl.Series, "hash", lambda self, *a, **k: pl.Series(np.zeros(self.len(), dtype=np.uint64)))
    codes, distinct = _votes.answer_codes(series)
    assert distinct == 4 and len({c for c, a in zip(codes.tolist(), ans, strict=True) if a is not None}) == 4
    assert _same(_votes.maj_matrix(np.array(gid), np.array(ok), series, 200, 6), want)
    assert _same(want, _reference(gid, ok, ans, 200, 6))


def test_answers_of_any_type_and_tables_without_a_vote() -> None:
    got = _votes.maj_matrix(np.array([0, 0, 0, 1]), np.array([1, 1, 0, 0]), pl.Series([7, 7, 8, None]), 2, 3)
    assert got[0].tolist() == pytest.approx([2 / 3, 2 / 3, 1.0]) and np.isnan(got[1]).all()
    none = _votes.maj_matrix(np.array([0, 1]), np.array([1, 0]), pl.Series([None, None], dtype=pl.String), 2, 2)
    assert np.isnan(none).all()


def test_a_group_of_4096_rollouts_of_one_answer_is_refused_with_the_fix() -> None:
    df = pl.DataFrame({"step": [0] * 4096, "group": ["g"] * 4096, "sample": range(4096), "score": [1.0] * 4096,
                       "answer": ["4"] * 4096})
    with pytest.raises(ValueError, match="fewer than 4096 rollouts; drop the answer column"):
        step_metrics(df, ks=(1,))
    assert step_metrics(df.head(4095), ks=(1,))["maj@1"][0] == 1.0


def test_signatures_whose_fingerprints_collide_are_told_apart_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    # with every position weighted 1, a fingerprint is the sum of the packed counts: signatures such as
    # (1+3) and (2+2) share one, and must still get their own maj curves
    gid, ok, ans = _table(5, 400, 4, 0.2)
    want = _votes.maj_matrix(np.array(gid), np.array(ok), pl.Series(ans), 400, 10)
    monkeypatch.setattr(_votes, "_MIX", np.uint64(0))
    g = np.array([0, 0, 1, 1])
    _, sigs, _ = _votes._signatures(g, np.array([1, 3, 2, 2]))
    assert len(sigs) == 2
    assert _same(_votes.maj_matrix(np.array(gid), np.array(ok), pl.Series(ans), 400, 10), want)
    assert _same(want, _reference(gid, ok, ans, 400, 10))
