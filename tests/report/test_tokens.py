"""The x axis of tokens trained on (report/tokens.py) on real runs: TRL's own running count as logged, and
veRL's per-step count summed, a step the log left without a count (its validation steps) counted with the next
logged one. The totals were summed by hand from the logs (a regex over ``output.log``, each value times the
steps since the previous logged one; ``num_tokens`` read off trainer_state.json)."""

from __future__ import annotations

from pathlib import Path

import rlvitals
from rlvitals.catalog.views import load_views
from rlvitals.diagnosis import diagnose
from rlvitals.report import build_page, render_html
from rlvitals.report.tokens import token_axis
from rlvitals.synthetic.scenarios import run_from_series

CORPUS = Path(__file__).parents[2] / "benchmarks" / "corpus" / "runs"


def test_a_trl_run_reads_its_own_running_count() -> None:
    axis = token_axis(rlvitals.load(CORPUS / "made__trl-cpu__grpo-healthy")[0], load_views())
    assert axis is not None
    assert (axis["key"], axis["summed"]) == ("training/num_tokens", False)
    assert list(zip(axis["steps"][:3], axis["tokens"][:3], strict=True)) == [(1, 473), (2, 953), (3, 1426)]
    assert (axis["steps"][-1], axis["tokens"][-1]) == (30, 13090)


def test_a_verl_run_sums_its_per_step_count_over_the_steps_it_stands_for() -> None:
    for name, total, last in (("verl__agent-opd__qwen2.5-3b-klreward0.0005-healthy", 279914916, 179),
                              ("verl__agent-opd__qwen2.5-3b-klreward0.05-length-collapse", 24367511, 59)):
        axis = token_axis(rlvitals.load(CORPUS / name)[0], load_views())
        assert axis is not None
        assert (axis["key"], axis["summed"]) == ("perf/total_num_tokens", True)
        assert (axis["steps"][-1], axis["tokens"][-1]) == (last, total)
        assert axis["tokens"] == sorted(axis["tokens"])


def test_a_run_without_a_token_count_has_no_axis_and_the_page_offers_none() -> None:
    run = run_from_series({"actor/entropy": [1.0, 0.9, 0.8]})
    assert token_axis(run, load_views()) is None
    assert token_axis(run_from_series({"perf/total_num_tokens": [5.0]}), load_views()) is None  # one step: no axis
    page = build_page([run], [diagnose(run)])
    assert page["tokens"] == {} and '<option value="tokens"' not in render_html(page)


def test_the_toolbar_offers_the_tokens_axis_where_a_run_counts_its_tokens() -> None:
    run = rlvitals.load(CORPUS / "made__trl-cpu__grpo-healthy")[0]
    page = build_page([run], [diagnose(run)])
    html = render_html(page)
    assert page["tokens"]["r0"]["tokens"][-1] == 13090
    assert '<option value="tokens" data-en="tokens trained on" data-zh="已训练 token 数">' in html
