"""What the catalog tells a user — an unknown metric, a key whose meaning depends on a framework version
the log does not show — is written in English and Chinese where it is made; the English is as before."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from rlvitals.catalog.aliases import Context, KeyResolver
from rlvitals.catalog.catalog import load_catalog
from rlvitals.catalog.lookup import lookup
from rlvitals.cli import main
from rlvitals.errors import UnknownMetricError
from rlvitals.words import in_lang

CATALOG = load_catalog()
TRL_GRPO = {"framework": "trl", "algorithm": "grpo", "family": "rl"}
#: what the catalog says of TRL's reward_std before 1.0 (its alias note, English only)
NOTE = ("the mean of the per-group reward stds, as TRL logged it before 1.0 and as most published GRPO logs have "
        "it; TRL ≥1.0 logs the whole-batch std (critic/score/std) under this name")


def test_an_unknown_canonical_key_is_refused_in_both_languages() -> None:
    with pytest.raises(UnknownMetricError) as refused:
        CATALOG.get("actor/no_such")
    assert str(refused.value) == ("metric 'actor/no_such' is not in the catalog; run 'rlvitals explain --list' to "
                                  "see every canonical key")
    assert refused.value.text("zh") == ("指标 'actor/no_such' 不在指标目录中；运行 'rlvitals explain --list' "
                                        "可以查看全部规范键名")


def test_an_unknown_key_is_refused_with_its_near_misses_in_both_languages() -> None:
    with pytest.raises(UnknownMetricError) as refused:
        lookup("actor/entrpy")
    close = ["'actor/entropy'", "'actor/seq_entropy'", "'actor/entropy_loss'"]
    assert str(refused.value) == (f"'actor/entrpy' is neither a canonical metric nor an alias of one. Did you mean "
                                  f"{' or '.join(close)}? Run 'rlvitals explain --list' to see every metric.")
    assert refused.value.text("zh") == (f"'actor/entrpy' 既不是已收录的指标，也不是它们的别名。是不是想找 "
                                        f"{'、'.join(close)}？运行 'rlvitals explain --list' 可以查看全部指标。")
    with pytest.raises(UnknownMetricError) as far:  # nothing close: no question
        lookup("zzzzqqq", lang="zh")
    assert far.value.text("zh") == ("'zzzzqqq' 既不是已收录的指标，也不是它们的别名。"
                                    "运行 'rlvitals explain --list' 可以查看全部指标。")
    assert str(far.value) == ("'zzzzqqq' is neither a canonical metric nor an alias of one. Run 'rlvitals explain "
                              "--list' to see every metric.")


def test_explain_of_an_unknown_key_in_chinese() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["explain", "zzzzqqq", "--lang", "zh"], out=out, err=err) == 2
    assert (out.getvalue(), err.getvalue()) == (
        "", "rlvitals：'zzzzqqq' 既不是已收录的指标，也不是它们的别名。运行 'rlvitals explain --list' "
            "可以查看全部指标。\n")


@pytest.mark.parametrize(("ctx", "en", "zh"), [
    (TRL_GRPO, "trl versions", "'reward_std' 在 trl 的不同版本里含义不同"),
    ({}, "framework versions", "'reward_std' 在不同的框架版本里含义不同"),
], ids=["trl", "no framework"])
def test_a_key_read_without_its_version_is_noted_in_both_languages(ctx: dict[str, str], en: str, zh: str) -> None:
    notes: list[str] = []
    hit = KeyResolver(CATALOG).resolve("reward_std", Context(version_low=(0, 20), **ctx), notes)
    assert hit is not None and hit.canonical == "group/reward_std/mean" and len(notes) == 1
    assert notes[0] == (f"'reward_std' means different things across {en}; the version is not visible in this log, "
                        f"so it was read as 'group/reward_std/mean' ({NOTE})")
    assert in_lang(notes[0], "zh") == (f"{zh}；这份日志看不出版本，所以按 'group/reward_std/mean' 读取"
                                       f"（英文原文：{NOTE}）")


def test_inspect_says_the_version_note_in_chinese(tmp_path: Path) -> None:
    log = tmp_path / "trl.jsonl"  # TRL ≥ 0.17 keys, nothing that tells 0.x from 1.x
    log.write_text("".join(json.dumps({"step": s, "reward": 0.5, "reward_std": 0.2, "kl": 0.01, "loss": 0.1,
                                       "completions/mean_length": 100}) + "\n" for s in range(1, 21)))
    out = io.StringIO()
    assert main(["inspect", str(log), "--lang", "zh"], out=out, err=io.StringIO()) == 0
    assert ("说明：'reward_std' 在 trl 的不同版本里含义不同；这份日志看不出版本，所以按 'group/reward_std/mean' 读取"
            f"（英文原文：{NOTE}）") in out.getvalue()
