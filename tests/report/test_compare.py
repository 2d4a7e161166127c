"""The comparison table of several runs (report/compare.py) on real corpus runs: each headline metric's final
and best value with its step, read by the catalog's direction (none for KL, entropy, length), and the config
keys whose values differ; both shown in the comparison section of the report. The expected numbers were read
off the logs by hand (``grep 'critic/score/mean'`` over each ``output.log``; the overrides diffed)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import rlvitals
from rlvitals.catalog.catalog import load_catalog
from rlvitals.catalog.views import load_views, parse_views
from rlvitals.diagnosis import diagnose
from rlvitals.errors import CatalogError
from rlvitals.report import build_page, render_html
from rlvitals.report.compare import comparison_table, config_diff, final_best
from rlvitals.run.run import Run

CORPUS = Path(__file__).parents[2] / "benchmarks" / "corpus" / "runs"
HEALTHY = CORPUS / "verl__agent-opd__qwen2.5-3b-klreward0.0005-healthy"
COLLAPSE = CORPUS / "verl__agent-opd__qwen2.5-3b-klreward0.05-length-collapse"
SURGE = CORPUS / "verl__agent-opd__qwen2.5-3b-tokenkl0.1-entropy-surge"
#: the override lines of the two runs' Hydra configs that differ (diff of their overrides.yaml)
DIFFERING = {
    "algorithm.kl_ctrl.kl_coef": ["0.0005", "0.05"],
    "algorithm.filter_reward_std": ["True", None],
    "algorithm.reward_std_threshold": ["0.5", None],
    "data.train_batch_size": ["64", "32"],
    "actor_rollout_ref.rollout.multi_turn.mask_teacher_kl_after_tool_error": ["False", "True"],
    "actor_rollout_ref.rollout.val_kwargs.n": ["16", "30"],
    "trainer.save_freq": ["100", "50"],
}


@pytest.fixture(scope="module")
def runs() -> list[tuple[str, Run]]:
    return [("r0", rlvitals.load(HEALTHY)[0]), ("r1", rlvitals.load(COLLAPSE)[0])]


@pytest.fixture(scope="module")
def table(runs: list[tuple[str, Run]]) -> dict:
    return comparison_table(runs, load_views(), load_catalog())


def _row(table: dict, key: str) -> dict:
    return next(r for r in table["rows"] if key in r["keys"])


def test_the_reward_row_holds_each_runs_final_and_best_value_with_their_steps(table: dict) -> None:
    row = _row(table, "critic/score/mean")
    assert row["better"] == "higher" and row["name"]["en"] and row["name"]["zh"]
    healthy, collapse = row["cells"]
    assert (healthy["final"], healthy["final_step"]) == (pytest.approx(0.05499999597668648), 179)
    assert (healthy["best"], healthy["best_step"]) == (pytest.approx(0.15958333015441895), 139)
    assert (collapse["final"], collapse["final_step"]) == (pytest.approx(-0.882617175579071), 59)
    assert (collapse["best"], collapse["best_step"]) == (pytest.approx(-0.4999999701976776), 5)
    assert row["top"] == "r0"


def test_kl_entropy_and_length_have_a_final_value_but_no_best(table: dict) -> None:
    for key, finals in (("actor/entropy", (0.12021379917860031, 0.4857408404350281)),
                        ("response_length/mean", (1237.1978759765625, 9.818359375))):
        row = _row(table, key)
        assert row["better"] is None and row["top"] is None
        assert [c["final"] for c in row["cells"]] == [pytest.approx(f) for f in finals]
        assert [c["best"] for c in row["cells"]] == [None, None]
    kl = _row(table, "actor/reward_kl_penalty")  # the first KL key of the first screen's slot these runs logged
    assert kl["row"] == "actor/kl_loss" and kl["better"] is None
    assert [c["final_step"] for c in kl["cells"]] == [179, 59]


def test_the_rows_follow_the_first_screen_then_the_compare_slots(table: dict) -> None:
    keys = [r["keys"][0] for r in table["rows"]]
    assert keys[-5:] == ["critic/score/mean", "actor/reward_kl_penalty", "actor/entropy", "response_length/mean",
                         "actor/grad_norm"]
    # validation first: each run's core curve per source; a curve the other run did not log is "—" there
    val = [r for r in table["rows"] if r["validation"]]
    assert [r["row"] for r in val] == ["aime_2024/acc/mean@n", "aime_2024/score/mean@n"]
    assert val[0]["keys"] == ["val-core/aime_2024/acc/mean@16"]
    assert val[0]["cells"][1]["key"] is None and val[0]["cells"][1]["final"] is None
    assert val[1]["cells"][0]["key"] is None


def test_validation_means_over_different_numbers_of_samples_share_a_row(runs: list[tuple[str, Run]]) -> None:
    surge = rlvitals.load(SURGE)[0]  # validated with val_kwargs.n=32; the collapsed run with n=30
    table = comparison_table([("r0", surge), runs[1]], load_views(), load_catalog())
    row = next(r for r in table["rows"] if r["validation"])
    assert row["row"] == "aime_2024/score/mean@n"
    assert row["keys"] == ["val-aux/aime_2024/score/mean@32", "val-aux/aime_2024/score/mean@30"]
    assert [(c["final"], c["final_step"]) for c in row["cells"]] == [
        (pytest.approx(-0.9625), 60), (pytest.approx(-0.9798888888888888), 50)]


def test_the_config_diff_holds_exactly_the_keys_the_runs_were_given_different_values(table: dict) -> None:
    rows = table["config"]["rows"]
    assert {r["key"]: r["values"] for r in rows} == DIFFERING
    assert table["config"]["without"] == []


def test_the_config_diff_is_empty_for_the_same_config_and_leaves_out_a_run_without_one(runs: list) -> None:
    same = runs[0][1].config
    assert config_diff([("a", same), ("b", dict(same))]) == {"rows": [], "without": []}
    assert config_diff([("a", same), ("b", {})]) == {"rows": [], "without": ["b"]}  # one config: nothing to diff
    # True is not 1, though Python says they are equal
    assert config_diff([("a", {"x": True}), ("b", {"x": 1})])["rows"] == [{"key": "x", "values": ["True", "1"]}]


def test_final_and_best_skip_what_is_not_finite_and_read_the_direction() -> None:
    steps, values = np.array([10, 20, 30, 40]), np.array([3.0, np.inf, 1.0, np.nan])
    assert final_best(steps, values, "lower") == {"final": 1.0, "final_step": 30, "best": 1.0, "best_step": 30}
    assert final_best(steps, values, "higher") == {"final": 1.0, "final_step": 30, "best": 3.0, "best_step": 10}
    assert final_best(steps, np.full(4, np.nan), "higher") is None


def test_the_report_of_two_runs_shows_the_table_and_the_diff(runs: list[tuple[str, Run]]) -> None:
    page = build_page([r for _, r in runs], [diagnose(r) for _, r in runs])
    html = render_html(page)
    section = html[html.index('<section id="comparison"'):]
    section = section[:section.index("</section>")]
    assert re.findall(r'<tr data-key="([^"]+)">', section) == list(DIFFERING)
    row = section[section.index('<tr data-row="critic/score/mean">'):]
    row = row[:row.index("</tr>")]
    assert re.findall(r'class="rlv-best" data-run="(r\d)" data-value="([^"]*)"', row) == [
        ("r0", "0.15958333015441895"), ("r1", "-0.4999999701976776")]
    assert "0.1596 ★" in row and "第 139 步" in row and "step 139" in row
    # a single run has no comparison section
    assert build_page([runs[0][1]], [diagnose(runs[0][1])])["comparison"] is None


def test_a_malformed_compare_table_of_the_views_is_refused_by_name() -> None:
    base = {"first_look": {"rl": [["validation"]]}, "clock": {"step_seconds": ["timing_s/step"]}}
    with pytest.raises(CatalogError, match=r"views.toml: \[compare\] rl must be a list of non-empty lists"):
        parse_views(base | {"compare": {"rl": [[]]}})
    with pytest.raises(CatalogError, match=r"views.toml: \[compare\] must be a table"):
        parse_views(base | {"compare": ["actor/grad_norm"]})
    assert parse_views(base).table("rl") == (("validation",),)


def test_every_catalog_direction_of_a_best_value_is_higher_or_lower() -> None:
    catalog = load_catalog()
    better = {m.key: m.better for m in catalog.metrics.values() if m.better}
    assert better["critic/score/mean"] == "higher" and better["sft/loss"] == "lower"
    assert set(better.values()) == {"higher", "lower"}
    assert not catalog.get("actor/entropy").better and not catalog.get("actor/kl_loss").better


def test_the_catalog_refuses_a_direction_of_best_that_is_neither_higher_nor_lower() -> None:
    from rlvitals.catalog.catalog import parse_catalog

    layer = {"order": ["L1"], "L1": {"en": "Stability", "zh": "稳定性", "short_en": "L1", "short_zh": "L1"}}
    raw = {"layers": layer, "metric": [{"key": "x", "layer": "L1", "scale": "token", "scope": "token",
                                        "varies": "time", "kind": "train", "better": "up"}]}
    with pytest.raises(CatalogError, match=r"'x' has better='up'; expected one of \('higher', 'lower'\)"):
        parse_catalog(raw)
