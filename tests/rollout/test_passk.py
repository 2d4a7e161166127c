"""pass@k, G-Pass@k, mG-Pass@k and exact maj@k against exact math, brute force and lighteval's fixtures."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
from conftest import REF
from hypothesis import given
from hypothesis import strategies as st

from rlvitals.rollout import passk
from rlvitals.rollout.passk import (
    g_pass_at_k,
    maj_at_k,
    maj_at_k_answers,
    maj_curve,
    maj_curves,
    mg_pass_at_k,
    pass_at_k,
    pass_curves,
)

LIGHTEVAL = REF / "lighteval"  # lighteval's own test cases (tests/fixtures/ref/lighteval/README.md)


def _cases(name: str) -> list[dict]:  # type: ignore[type-arg]
    return json.loads((LIGHTEVAL / name).read_text())["test_cases"]  # type: ignore[no-any-return]


def _golds(doc: dict) -> list[str]:  # type: ignore[type-arg]
    idx = doc["gold_index"]
    return [doc["choices"][i].strip() for i in (idx if isinstance(idx, list) else [idx])]


def _correct(case: dict) -> list[bool]:  # type: ignore[type-arg]
    """lighteval's exact match after stripping (case-sensitive: 'au' != 'Au')."""
    golds = _golds(case["doc"])
    texts = case["model_response"]["text"][: case["metric_params"].get("n")]
    return [t.strip() in golds for t in texts]


def _exact_pass(n: int, c: int, k: int) -> float:
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _exact_tail(n: int, c: int, k: int, m: int) -> Fraction:
    return Fraction(sum(math.comb(c, x) * math.comb(n - c, k - x) for x in range(m, min(c, k) + 1)),
                    math.comb(n, k))


# -- pass@k -------------------------------------------------------------------------------------

REFERENCE_TABLE = [  # algorithms.md §1.1 (product form vs math.comb, 12 decimals)
    (10, 1, 1, 0.1), (10, 1, 5, 0.5), (10, 3, 5, 0.916666666667), (200, 1, 1, 0.005), (200, 1, 10, 0.05),
    (200, 1, 100, 0.5), (200, 10, 1, 0.05), (200, 10, 10, 0.408547866081), (200, 10, 100, 0.999228973937),
    (200, 100, 10, 0.999228973937), (6, 3, 1, 0.5), (2, 1, 1, 0.5), (2, 1, 2, 1.0),
]


@pytest.mark.parametrize(("n", "c", "k", "want"), REFERENCE_TABLE)
def test_pass_at_k_reference_table(n: int, c: int, k: int, want: float) -> None:
    got = float(pass_at_k([n], [c], k)[0])
    assert got == pytest.approx(want, abs=1e-12 if want in (0.5, 1.0, 0.1, 0.05, 0.005) else 5e-13)
    assert got == pytest.approx(_exact_pass(n, c, k), abs=1e-12)


def test_pass_at_k_vectorised_edges() -> None:
    got = pass_at_k(np.array([4, 4, 3, 1, 5]), np.array([4, 2, 1, 0, 0]), 3)
    assert got[0] == 1.0 and got[1] == 1.0  # n - c < k is exactly 1
    assert math.isnan(got[3])  # n < k has no unbiased estimate
    assert got[4] == 0.0 and got[2] == pytest.approx(1.0)
    assert pass_at_k([], [], 1).shape == (0,)


@pytest.mark.parametrize(("n", "c", "k"), [([3], [4], 1), ([3], [-1], 1), ([3], [1], 0)])
def test_pass_at_k_rejects_bad_counts(n: list[int], c: list[int], k: int) -> None:
    with pytest.raises(ValueError, match=r"0 <= c <= n|positive integer"):
        pass_at_k(n, c, k)


@st.composite
def nck(draw: st.DrawFn) -> tuple[int, int, int]:
    n = draw(st.integers(1, 64))
    return n, draw(st.integers(0, n)), draw(st.integers(1, n))


@given(nck())
def test_pass_at_k_matches_math_comb(t: tuple[int, int, int]) -> None:
    n, c, k = t
    assert float(pass_at_k([n], [c], k)[0]) == pytest.approx(_exact_pass(n, c, k), abs=1e-12)


@given(st.lists(nck(), min_size=1, max_size=30), st.integers(1, 64))
def test_pass_at_k_vectorised_equals_scalar(groups: list[tuple[int, int, int]], k: int) -> None:
    n = np.array([g[0] for g in groups])
    c = np.array([g[1] for g in groups])
    got = pass_at_k(n, c, k)
    for i, (a, b, _) in enumerate(groups):
        if a < k:
            assert math.isnan(got[i])
        else:
            assert got[i] == pytest.approx(_exact_pass(a, b, k), abs=1e-12)


@pytest.mark.parametrize("fixture", ["pass_at_k.json", "pass_at_k_math.json"])
def test_pass_at_k_lighteval_fixtures(fixture: str) -> None:
    for case in _cases(fixture):
        ok = _correct(case)
        (want,) = case["expected_output"].values()
        got = float(pass_at_k([len(ok)], [sum(ok)], case["metric_params"]["k"])[0])
        assert got == pytest.approx(want, abs=case["tolerance"]), case["name"]


# -- G-Pass@k ----------------------------------------------------------------------------------

def test_g_pass_lighteval_fixture() -> None:
    for case in _cases("g_pass_at_k.json"):
        ok, k = _correct(case), case["metric_params"]["k"]
        n, c = len(ok), sum(ok)
        for tau in case["metric_params"]["thresholds"]:
            want = case["expected_output"][f"g-pass@{k}_{tau}"]
            assert float(g_pass_at_k([n], [c], k, tau)[0]) == pytest.approx(want, abs=case["tolerance"]), case["name"]
        assert float(mg_pass_at_k([n], [c], k)[0]) == pytest.approx(
            case["expected_output"][f"mg-pass@{k}"], abs=case["tolerance"]), case["name"]


@given(nck(), st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]))
def test_g_pass_matches_exact_hypergeometric(t: tuple[int, int, int], tau: float) -> None:
    n, c, k = t
    m = max(math.ceil(k * tau), 1)
    assert float(g_pass_at_k([n], [c], k, tau)[0]) == pytest.approx(float(_exact_tail(n, c, k, m)), abs=1e-12)
    mg = sum((_exact_tail(n, c, k, i) for i in range(math.ceil(k / 2) + 1, k + 1)), Fraction(0)) * Fraction(2, k)
    assert float(mg_pass_at_k([n], [c], k)[0]) == pytest.approx(float(mg), abs=1e-12)
    if tau == 0.0:
        assert float(g_pass_at_k([n], [c], k, 0.0)[0]) == pytest.approx(_exact_pass(n, c, k), abs=1e-12)


def test_g_pass_nan_and_bad_tau() -> None:
    assert math.isnan(g_pass_at_k([2], [1], 3)[0]) and math.isnan(mg_pass_at_k([2], [1], 3)[0])
    with pytest.raises(ValueError, match="tau must be in"):
        g_pass_at_k([4], [2], 2, tau=1.5)


# -- maj@k -------------------------------------------------------------------------------------

def _brute_maj(answers: list[object], correct: list[bool], k: int) -> Fraction:
    """Enumerate every k-subset; a tie between t answers gives each tied answer probability 1/t."""
    total, subsets = Fraction(0), 0
    for idx in itertools.combinations(range(len(answers)), k):
        votes: dict[object, list[int]] = {}
        for i in idx:
            key = ("none", i) if answers[i] is None else answers[i]
            votes.setdefault(key, []).append(i)
        top = max(len(v) for v in votes.values())
        tied = [v for v in votes.values() if len(v) == top]
        for members in tied:  # answer correctness = share of its rollouts (in the whole group) correct
            everyone = [i for i in range(len(answers)) if (answers[i] if answers[i] is not None else ("none", i))
                        == (answers[members[0]] if answers[members[0]] is not None else ("none", members[0]))]
            total += Fraction(sum(correct[i] for i in everyone), len(everyone)) / len(tied)
        subsets += 1
    return total / subsets


@st.composite
def answered_group(draw: st.DrawFn) -> tuple[list[object], list[bool]]:
    n = draw(st.integers(1, 9))
    answers = draw(st.lists(st.sampled_from(["a", "b", "c", "d", None]), min_size=n, max_size=n))
    gold = draw(st.sampled_from(["a", "b"]))
    return answers, [a == gold for a in answers]


@given(answered_group())
def test_maj_at_k_matches_brute_force(g: tuple[list[object], list[bool]]) -> None:
    answers, correct = g
    for k in range(1, len(answers) + 1):
        want = float(_brute_maj(answers, correct, k))
        assert maj_at_k_answers(answers, correct, k) == pytest.approx(want, abs=1e-12)  # type: ignore[arg-type]


@given(st.lists(st.tuples(st.integers(1, 3), st.booleans()), min_size=1, max_size=3))
def test_maj_at_k_mixed_correctness_within_answer(spec: list[tuple[int, bool]]) -> None:
    # rollouts that share an answer but disagree on correctness: the answer is worth its correct share
    answers: list[object] = []
    correct: list[bool] = []
    for i, (m, first_ok) in enumerate(spec):
        answers += [f"x{i}"] * m
        correct += [first_ok] + [not first_ok] * (m - 1)
    for k in range(1, len(answers) + 1):
        want = float(_brute_maj(answers, correct, k))
        assert maj_at_k_answers(answers, correct, k) == pytest.approx(want, abs=1e-12)  # type: ignore[arg-type]


def test_maj_tie_rule_is_uniform() -> None:
    assert maj_at_k([1, 1, 1], [1, 0, 0], 3) == pytest.approx(1 / 3)
    assert maj_at_k([2, 2], [2, 0], 4) == pytest.approx(0.5)
    assert maj_at_k_answers([None, None, None], [True, False, False], 3) == pytest.approx(1 / 3)  # 3 distinct


def test_maj_lighteval_fixture() -> None:
    for case in _cases("maj_at_k.json"):
        texts = case["model_response"]["text"]
        ok = _correct(case)
        got = maj_at_k_answers([t.strip() for t in texts], ok, case["metric_params"]["k"])
        (want,) = case["expected_output"].values()
        counts = sorted((texts.count(t) for t in set(texts)), reverse=True)
        if len(counts) > 1 and counts[0] == counts[1]:
            # "No Majority": lighteval gives the tie to the earliest answer (Paris → 1); we average over
            # the tied answers (1/3), the order-free expectation.
            assert case["name"] == "Maj at K - No Majority" and want == 1
            assert got == pytest.approx(1 / 3, abs=1e-12)
        else:
            assert got == pytest.approx(want, abs=case["tolerance"]), case["name"]


def test_maj_curve_n64_is_exact_and_fast() -> None:
    sig = ((20, 20), (12, 0), (12, 0), (10, 0), (5, 0), (5, 0))
    curve = maj_curve(sig, 64)
    assert len(curve) == 64 and curve[-1] == 1.0 and curve[0] == pytest.approx(20 / 64)
    assert all(0.0 <= v <= 1.0 for v in curve)


def test_maj_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        maj_at_k_answers(["a"], [True, False], 1)
    with pytest.raises(ValueError, match="0 <= correct"):
        maj_at_k([1], [2], 1)
    with pytest.raises(ValueError, match="positive integer"):
        maj_at_k([1], [1], 0)
    assert math.isnan(maj_at_k([1, 1], [1, 0], 3))


# -- the batch forms: the same bits as one call per group / per k ----------------------------------

def _signatures(seed: int, count: int, sizes: tuple[int, ...]) -> list[tuple[tuple[int, int], ...]]:
    """Random answer-count signatures ((count, correct) per answer, ascending) of groups of the given sizes."""
    rnd = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        left, parts = int(rnd.choice(sizes)), []
        while left:
            m = int(min(left, rnd.choice([1, 1, 2, 3, max(1, left // 3), left])))
            parts.append((m, int(rnd.integers(0, m + 1))))
            left -= m
        out.append(tuple(sorted(parts)))
    return out


def _bits(values: object) -> list[int]:
    return np.asarray(values, dtype=np.float64).view(np.uint64).tolist()  # type: ignore[no-any-return]


@pytest.mark.parametrize("kmax", [1, 5, 16, 40])
def test_maj_curves_are_one_call_per_group_bit_for_bit(kmax: int) -> None:
    # groups up to 300 rollouts: past ~60 the vote counts exceed 2**53 and are rounded, so the order of the
    # arithmetic shows in the last bits; sharing the counts between groups must not change it
    sigs = _signatures(kmax, 300, (1, 2, 4, 16, 16, 40, 64, 300))
    batch = maj_curves(sigs, kmax)
    assert [_bits(b) for b in batch] == [_bits(maj_curve.__wrapped__(s, kmax)) for s in sigs]


def test_the_matrix_counts_are_the_term_by_term_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    # below 2**53 the vote counts are exact integers, drawn as a product of matrices; with the bound at 0
    # every count is summed term by term, as for large groups: the values must be the same bits (the large
    # groups here would differ if they were drawn as matrices: the bound is where exactness ends)
    sigs = _signatures(7, 300, (2, 5, 16, 16, 33, 60, 100, 300))
    fast = [_bits(c) for c in maj_curves(sigs, 40)]  # (a bound of 2**60 would change 5 of them)
    monkeypatch.setattr(passk, "_EXACT_BELOW", 0)
    assert [_bits(c) for c in maj_curves(sigs, 40)] == fast


@pytest.mark.parametrize("tau", [0.0, 0.5, 0.8, 1.0])
def test_pass_curves_are_one_call_per_k_bit_for_bit(tau: float) -> None:
    rnd = np.random.default_rng(3)
    n = rnd.integers(1, 40, size=2000)
    c = rnd.integers(0, n + 1)
    ks = list(range(1, 34))
    passes, g_passes = pass_curves(n, c, ks, tau)
    for k in ks:
        assert _bits(passes[k]) == _bits(pass_at_k(n, c, k))
        assert _bits(g_passes[k]) == _bits(g_pass_at_k(n, c, k, tau))


def test_pass_curves_edges() -> None:
    passes, g_passes = pass_curves([], [], (1, 3))
    assert passes[3].shape == (0,) and g_passes[1].shape == (0,)
    with pytest.raises(ValueError, match="tau must be in"):
        pass_curves([2], [1], (1,), tau=1.5)
    with pytest.raises(ValueError, match="positive integer"):
        pass_curves([2], [1], (0, 1))
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_curves([2], [3], (1,))
