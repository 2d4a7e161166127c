"""The diagnosis config: ``max_status = "note"`` caps a check to a note (its words and advice kept, out of
the verdict), and settings built in code are refused at construction, with the words the file uses."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REAL

import rlvitals
from rlvitals.checks.config import CheckSettings, DiagnoseConfig, load_config
from rlvitals.diagnosis import Diagnosis, Finding, diagnose
from rlvitals.errors import ConfigError

QWEN = "verl__verl-data__Qwen2.5-0.5B-bsz256_2-prompt1024-resp512-0.567.log"


def finding(d: Diagnosis, check: str, metric: str) -> Finding:
    (found,) = [f for f in d.findings if f.check == check and f.metrics[:1] == (metric,)]
    return found


@pytest.fixture(scope="module")
def qwen() -> rlvitals.Run:
    return rlvitals.load(REAL / QWEN)[0]


def test_a_check_capped_to_a_note_keeps_its_words_and_leaves_the_verdict(tmp_path: Path) -> None:
    # the real Unsloth checkpoint-250 run: the KL spike at step 206 (0.27 per token) is its only warning
    name = "trl__UnslothGRPO__checkpoint-250_trainer_state.json"
    run = rlvitals.load(REAL / name)[0]
    plain = diagnose(run)
    jump = next(f for f in plain.findings if f.check == "kl_jump" and f.status == "warn")
    assert plain.layers["L1"] == "warn" and plain.verdict == "warn"
    cfg = tmp_path / "rlvitals.toml"
    cfg.write_text('[checks.kl_jump]\nmax_status = "note"\n', encoding="utf-8")
    capped = diagnose(run, load_config(cfg))
    note = next(f for f in capped.findings if f.check == "kl_jump" and f.metrics == jump.metrics)
    assert note.status == "note" and note.message == jump.message and note.advice == jump.advice
    assert note.onset_step == jump.onset_step and capped.layers["L1"] == "ok"
    # the other findings are untouched, and the verdict is theirs: ok when nothing else warns or fails
    rest = [f.status for f in capped.findings if f.check != "kl_jump" and f.status in ("warn", "fail")]
    assert capped.verdict == ("fail" if "fail" in rest else "warn" if rest else "ok")
    assert [(f.status, f.message) for f in capped.findings if f.check != "kl_jump"] == [
        (f.status, f.message) for f in plain.findings if f.check != "kl_jump"]


def test_a_note_cap_does_not_raise_an_ok(qwen: rlvitals.Run) -> None:
    d = diagnose(qwen, DiagnoseConfig({"grad_norm_spike": CheckSettings(max_status="note")}))
    assert finding(d, "grad_norm_spike", "critic/grad_norm").status == "ok"


@pytest.mark.parametrize(("make", "message"), [
    (lambda: CheckSettings(max_status="skipped"), r"max_status = 'skipped': expected one of ok, note, warn, fail"),
    (lambda: CheckSettings(max_status="notice"), r"max_status = 'notice': expected one of ok, note, warn, fail"),
    (lambda: CheckSettings(enabled="no"), r"CheckSettings\(enabled='no'\): expected true or false"),
    (lambda: DiagnoseConfig({"mfu_lo": CheckSettings()}),
     r"DiagnoseConfig: unknown check 'mfu_lo'; did you mean 'mfu_low'\?"),
    (lambda: DiagnoseConfig({"mfu_low": CheckSettings(params={"lwo": 0.2})}),
     r"DiagnoseConfig: check 'mfu_low' has no setting 'lwo'; did you mean 'low'\? \(its parameters: low\)"),
    (lambda: DiagnoseConfig({"mfu_low": {"max_status": "note"}}),
     r"DiagnoseConfig: the settings of 'mfu_low' are a dict; expected CheckSettings\(\.\.\.\)"),
])
def test_settings_built_in_code_are_checked_when_made(make: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make()  # type: ignore[operator]


def test_a_file_may_cap_at_note_but_not_at_skipped(tmp_path: Path) -> None:
    cfg = tmp_path / "rlvitals.toml"
    cfg.write_text('[checks.mfu_low]\nmax_status = "note"\n', encoding="utf-8")
    assert load_config(cfg).for_check("mfu_low").max_status == "note"
    cfg.write_text('[checks.mfu_low]\nmax_status = "skipped"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"rlvitals.toml: \[checks.mfu_low\] max_status = 'skipped': expected one "
                                          r"of ok, note, warn, fail"):
        load_config(cfg)


@pytest.mark.parametrize(("toml", "zh"), [
    ('[checks.mfu_lo]\n', "没有名为 'mfu_lo' 的检查，是不是想写 'mfu_low'？"),
    ('[checks.mfu_low]\nlwo = 0.2\n', "没有 'lwo' 这项设置，是不是想写 'low'？（可用的有：enabled、max_status、low）"),
    ('[checks.mfu_low]\nlow = "x"\n', "low = 'x'，应为数值，例如 "),
    ('[extra]\n', "未知的节 'extra'；只能有 [checks.<id>] 这一节"),
    ('[checks\n', "不是有效的 TOML"),
])
def test_a_bad_config_file_is_explained_in_chinese_too(tmp_path: Path, toml: str, zh: str) -> None:
    cfg = tmp_path / "rlvitals.toml"
    cfg.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(cfg)
    assert zh in caught.value.text("zh") and str(cfg) in caught.value.text("zh")
    assert caught.value.text("zh") != str(caught.value)
