"""The shipped links and every refusal of a broken links file."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rlvitals.catalog import bundled_toml
from rlvitals.checks import load_checks
from rlvitals.errors import CatalogError
from rlvitals.story import load_links, parse_links


def _shipped() -> dict[str, Any]:
    return copy.deepcopy(bundled_toml("rlvitals.story", "links.toml"))


def test_the_shipped_links_name_real_checks_and_say_why_in_both_languages() -> None:
    links = load_links()
    checks = {c.id: c for c in load_checks()}
    assert len(links.links) >= 20
    for link in links.links:
        assert set(link.cause) <= set(checks) and set(link.effect) <= set(checks), link.id
        assert link.words["en"] and link.words["zh"] and link.rule, link.id
        for name in link.cause_templates:
            assert any(name in checks[c].en.messages for c in link.cause), (link.id, name)


def test_the_symptom_table_is_in_the_links() -> None:
    """docs/reading-rules.md#links-symptom-table: each symptom's first and second check can explain it."""
    links = load_links()
    table = [("entropy_collapse", "reward_collapse"), ("clipfrac_high", "reward_collapse"),
             ("kl_shape", "kl_jump"), ("lr_schedule", "kl_jump"),
             ("length_reward_hacking", "val_reward_divergence"), ("aborted_high", "val_reward_divergence"),
             ("seqlen_imbalance", "throughput_drop"), ("oom_risk", "run_crashed")]
    for cause, effect in table:
        assert links.between(cause, effect), (cause, effect)


def _refused(match: str, change: Any) -> None:
    data = _shipped()
    change(data)
    with pytest.raises(CatalogError, match=match):
        parse_links(data)


def test_a_link_naming_a_check_that_does_not_exist_is_refused() -> None:
    _refused(r"link 'kl_jump_leaves_band' names the check 'kl_jumps', which does not exist",
             lambda d: d["link"][1].update(cause=["kl_jumps"]))


def test_a_template_no_cause_has_is_refused() -> None:
    _refused(r"link 'lr_jump_moves_policy' cause_templates names \['warn_jumpy'\]",
             lambda d: next(k for k in d["link"] if k["id"] == "lr_jump_moves_policy").update(
                 cause_templates=["warn_jumpy"]))


def test_words_in_one_language_only_are_refused() -> None:
    _refused(r"needs its words in English \(en\) and Chinese \(zh\)", lambda d: d["link"][0].pop("zh"))


def test_a_check_that_causes_itself_is_refused() -> None:
    _refused(r"has \['kl_jump'\] as its own cause", lambda d: d["link"][1].update(effect=["kl_band", "kl_jump"]))


def test_an_id_given_twice_is_refused() -> None:
    _refused(r"\['kl_jump_leaves_band'\] defined twice", lambda d: d["link"].append(dict(d["link"][1])))


def test_an_unknown_timing_or_field_is_refused() -> None:
    _refused(r"timing = 'later'; expected one of \['during', 'same_step', 'after', 'first'\]",
             lambda d: d["link"][0].update(timing="later"))
    _refused(r"has unknown fields \['effects'\]", lambda d: d["link"][0].update(effects=["x"]))
    _refused(r"a link without an id needs an id", lambda d: d["link"][0].pop("id"))
    _refused(r"cause = 'kl_jump'; expected a list of names", lambda d: d["link"][0].update(cause="kl_jump"))


def test_a_link_that_names_no_reading_rule_is_refused() -> None:
    _refused(r"link 'kl_trend_leads_to_jump' rule = \[\]; expected the anchors of its entries in "
             r"docs/reading-rules\.md", lambda d: d["link"][0].pop("rule"))
    _refused(r"rule = \['seed-000 §12'\]", lambda d: d["link"][0].update(rule=["seed-000 §12"]))


def test_a_cause_status_other_than_warn_or_fail_is_refused() -> None:
    _refused(r"cause_status = \['note'\]; expected warn and/or fail",
             lambda d: d["link"][0].update(cause_status=["note"]))


def test_a_broken_tolerance_is_refused() -> None:
    _refused(r"\[timing\] steps = -1, share = 0.03", lambda d: d["timing"].update(steps=-1))
    _refused(r"\[timing\] steps = 3, share = 1.5", lambda d: d["timing"].update(share=1.5))
