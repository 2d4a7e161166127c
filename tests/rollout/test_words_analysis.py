"""The analysis' own notes, skip reasons and errors are written in English and Chinese."""

from __future__ import annotations

import pytest

import rlvitals
from rlvitals.errors import InputError
from rlvitals.words import in_lang


def _records(score: object = 1.0) -> list[dict[str, object]]:
    return [{"step": 1, "prompt": "2+2", "response": r, "score": score} for r in ("4", "5")]


def test_what_could_not_be_computed_reads_in_chinese() -> None:
    a = rlvitals.analyze_rollouts(_records())
    reason = next(r for r in a.skipped if r.startswith("maj@{k}"))
    assert in_lang(reason, "zh").startswith("maj@{k}, reasoning/self_consistency_gap@{k}: 需要 rollout 列 'answer'")
    trunc = next(r for r in a.skipped if r.startswith("rollout/truncation_share"))
    assert "需要 'truncated' 列（--truncated COLUMN）" in in_lang(trunc, "zh")
    note = next(n for n in a.notes if "token counts" in n)
    assert in_lang(note, "zh") == "rollout 没有 token 数：长度按字符计"


def test_rollouts_without_any_outcome_say_so_in_chinese() -> None:
    a = rlvitals.analyze_rollouts(_records(None))
    assert in_lang(a.skipped[0], "zh").startswith("group：2 条 rollout 都没有分数，也不知道对错（全为空）")


def test_an_unknown_source_name_reads_in_chinese() -> None:
    recs = [{**r, "source": "gsm8k"} for r in _records()]
    a = rlvitals.analyze_rollouts(recs, id_sources=["gsm8kk"])
    note = next(n for n in a.notes if "distribution source" in n)
    assert in_lang(note, "zh") == "分布内数据来源 ['gsm8kk'] 不在 rollout 的来源 ['gsm8k'] 之中"


def test_reward_weights_on_records_are_refused_in_both_languages() -> None:
    with pytest.raises(InputError, match="reward_weights apply when reading TRL completion files, not to a list") as e:
        rlvitals.analyze_rollouts(_records(), reward_weights={"acc": 1.0})
    assert e.value.text("zh").startswith("reward_weights 只适用于读取 TRL completions 文件，不适用于 list")
