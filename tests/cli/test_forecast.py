"""``rlvitals forecast``: the ceiling of real runs in both languages and as JSON, a target, runs the law does
not describe, and usage errors; ``--target-score`` on the commands that diagnose."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from test_docs_json import documented

from rlvitals.cli import main

QWEN = "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log"
GRPO = "verl__verl_training_log__grpo_run_deepseek7b_llm.log"


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def test_the_text_says_the_ceiling_what_is_spent_and_what_comes(real: Path) -> None:
    code, out, err = _cli("forecast", str(real / QWEN))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == str(real / QWEN)
    assert lines[1] == "  forecast of openai/gsm8k/reward/mean@1 (validation), read against actor/entropy"
    assert lines[2].startswith("  ceiling (at zero entropy) 0.597   95 % interval 0.56")
    assert "0.54 → 0.053 nats: 90% spent, 8% of the attainable gain left" in out
    assert out.count("  step ") == 5 and "other series" in out and "critic/score/mean (training reward)" in out


def test_in_chinese(real: Path) -> None:
    code, out, _ = _cli("forecast", str(real / QWEN), "--lang", "zh")
    assert code == 0 and "对 openai/gsm8k/reward/mean@1（验证集）的预测，以 actor/entropy 为依据" in out
    assert "天花板（熵为 0 时）" in out and "已用掉 90%，可获得的提升还剩 8%" in out
    assert "critic/score/mean（训练 reward）：天花板" in out


def test_the_json_is_the_documented_forecast_with_its_path(real: Path) -> None:
    code, out, _ = _cli("forecast", "--json", str(real / QWEN), str(real / GRPO))
    runs = orjson.loads(out)["runs"]
    assert code == 0 and [r["path"] for r in runs] == [str(real / QWEN), str(real / GRPO)]
    assert set(runs[0]) == documented("Forecast keys") | {"path"}
    assert runs[0]["ceiling"] == pytest.approx(0.597, abs=0.005) and runs[0]["target"] is None
    declined = runs[1]
    assert declined["ceiling"] is None and declined["predicted"] == {}
    assert declined["reason"]["en"].startswith("openai/gsm8k/reward/mean@1 did not rise as the entropy fell")
    assert declined["by_metric"][1]["metric"] == "critic/score/mean" and declined["by_metric"][1]["ceiling"]


def test_a_target_is_judged(real: Path) -> None:
    out = _cli("forecast", "--json", "--target", "0.7", str(real / QWEN))[1]
    entry = orjson.loads(out)["runs"][0]
    assert entry["target"] == 0.7 and entry["below_target"] is True
    text = _cli("forecast", "--target", "0.5", str(real / QWEN))[1]
    assert "target 0.5                within reach: the ceiling 0.597 is above it" in text


def test_diagnose_takes_a_target_score(real: Path) -> None:
    code, out, _ = _cli("diagnose", "--json", "--target-score", "0.7", str(real / QWEN))
    run = orjson.loads(out)["runs"][0]
    found = [f for f in run["findings"] if f["check"] == "entropy_ceiling"]
    assert code == 0 and [f["status"] for f in found] == ["warn"] and run["verdict"] == "warn"
    assert found[0]["message"]["en"].startswith("openai/gsm8k/reward/mean@1 (validation) will not reach the target 0.7")
    assert run["forecast"]["target"] == 0.7 and run["forecast"]["below_target"] is True
    # --target stays the rollout tables' ground-truth column where the rollout options are
    assert _cli("diagnose", "--target", "answer", str(real / QWEN))[2].startswith("rlvitals: ")


def test_the_example_run_is_declined_with_its_reason() -> None:
    code, out, _ = _cli("forecast", "--example")
    assert code == 0 and "no forecast: openai/gsm8k/acc/mean@1 did not rise as the entropy fell" in out


def test_without_a_run_it_says_what_it_needs() -> None:
    assert _cli("forecast") == (2, "", "rlvitals: forecast needs at least one RUN (or --example)\n")
    assert _cli("forecast", "--lang", "zh") == (2, "", "rlvitals：forecast 至少需要一个 RUN（或 --example）\n")


def test_an_unreadable_run_is_named_and_the_others_forecast(tmp_path: Path, real: Path) -> None:
    bad = tmp_path / "nothing.log"
    bad.write_text("no step here\n", encoding="utf-8")
    code, out, err = _cli("forecast", "--json", str(bad), str(real / QWEN))
    assert code == 2 and str(bad) in err and len(orjson.loads(out)["runs"]) == 1
