"""``Monitor(lang="zh")`` speaks Chinese: what it says about bad values, a state file it cannot open, broken
rollouts and sinks, items logged after close() and the stop it asks for; ``errors()`` and ``stop_reason()`` keep
the English value (what the TRL callback and existing code compare), with the Chinese beside it. A real run
(the simulator's KL spike: a warning from step 60) is fed step by step; ``lang="en"`` says the same in English.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

from rlvitals.live import Confirm
from rlvitals.live.alerts import Alert
from rlvitals.synthetic.pathologies import Spec, scenario
from rlvitals.watch.monitor import Monitor
from rlvitals.words import in_lang

STEPS = 120
SERIES = scenario(Spec(steps=STEPS, pathology="kl_spike"))


class Broken:
    name = "broken"

    def send(self, alert: Alert) -> str | None:
        raise RuntimeError("receiver exploded")


def _run(tmp_path: Path, lang: str) -> tuple[Monitor, list[str]]:
    """The KL-spike run with a bad value at step 1, broken rollouts at steps 3 and 4, a broken sink, a state path
    that is a folder, and one more step logged after close()."""
    err = io.StringIO()
    mon = Monitor([Broken()], every=1000, min_interval=0, stop_on="warn", lang=lang, state_path=tmp_path,
                  confirm=Confirm(looks=1),
                  err=err)
    for i in range(STEPS):
        values = {k: float(v[i]) for k, v in SERIES.items() if not math.isnan(float(v[i]))}
        mon.log(i + 1, {**values, "odd": object()} if i == 0 else values)
    mon.log_rollouts(3, 42)  # not rollouts at all
    assert mon.derive(4, 42) == {}
    mon.close()
    mon.log(STEPS + 1, {"actor/entropy": 0.1})
    return mon, err.getvalue().splitlines()


def _one(lines: list[str], start: str) -> str:
    found = [line for line in lines if line.startswith(start)]
    assert len(found) == 1, (start, lines)
    return found[0]


def test_a_chinese_monitor_says_everything_in_chinese(tmp_path: Path) -> None:
    mon, lines = _run(tmp_path, "zh")
    assert "rlvitals：第 1 步：odd=object 既不是数字也不是文本；这些值已跳过（同一组键只报告一次）" in lines
    state = _one(lines, f"rlvitals：{tmp_path}：告警状态无法打开（{tmp_path}：不能把这个文件用作 watch 状态（")
    assert state.endswith("请传入 --state NEW_FILE，或删掉这个文件重新开始）；告警只保存在内存里"), state
    assert _one(lines, "rlvitals：处理第 3 步的 rollout 时出错（").endswith("）；训练继续")
    assert _one(lines, "rlvitals：第 4 步的 rollout 无法分析（").endswith("）；训练继续")
    assert "rlvitals：告警未送达：broken：RuntimeError: receiver exploded" in lines
    assert f"rlvitals：第 {STEPS + 1} 步的指标在 close() 之后才到，已忽略（只报告一次）" in lines
    assert _one(lines, "rlvitals：警告 · KL 跳升（kl_jump）· 自第 60 步起，第 120 步时发现（monitor）：")
    assert "rlvitals：请求停止训练：第 120 步的判定为警告（stop_on=warn）：KL 跳升（自第 60 步起）" in lines
    assert not [line for line in lines if "monitor:" in line or "stop requested" in line or "training goes on" in line]
    # what the Monitor keeps is the English (the TRL callback and a custom loop compare it), the Chinese beside it
    assert mon.should_stop()
    reason = mon.stop_reason()
    assert reason == "verdict warn at step 120 (stop_on=warn): KL jump (since step 60)"
    assert in_lang(reason, "zh") == "第 120 步的判定为警告（stop_on=warn）：KL 跳升（自第 60 步起）"
    errors = mon.errors()
    assert "step 1: odd=object not a number or text; those values were skipped (reported once per set of keys)" \
        in errors
    assert state.removeprefix("rlvitals：") in [in_lang(e, "zh") for e in errors]
    assert len(errors) == len(lines) - 2  # every error said once, beside the alert and the stop


def test_an_english_monitor_keeps_the_english(tmp_path: Path) -> None:
    mon, lines = _run(tmp_path, "en")
    assert "rlvitals monitor: step 1: odd=object not a number or text; those values were skipped (reported once " \
           "per set of keys)" in lines
    state = _one(lines, f"rlvitals monitor: {tmp_path}: the alert state could not be opened ({tmp_path}: cannot "
                        "use this file as the watch state (")
    assert state.endswith("delete this one to start afresh); alerts are kept in memory only"), state
    assert _one(lines, "rlvitals monitor: rollouts of step 3 failed (").endswith("); training goes on")
    assert _one(lines, "rlvitals monitor: rollouts of step 4 could not be analysed (").endswith("); training goes on")
    assert "rlvitals monitor: alert not delivered: broken: RuntimeError: receiver exploded" in lines
    assert f"rlvitals monitor: metrics for step {STEPS + 1} arrived after close(); they were ignored (reported " \
           "once)" in lines
    assert _one(lines, "rlvitals: WARN kl_jump since step 60, seen at step 120 (monitor): ")
    assert "rlvitals: stop requested: verdict warn at step 120 (stop_on=warn): KL jump (since step 60)" in lines
    assert not [line for line in lines if "：" in line]
    assert mon.stop_reason() == "verdict warn at step 120 (stop_on=warn): KL jump (since step 60)"
    assert sorted(f"rlvitals monitor: {e}" for e in mon.errors()) == sorted(ln for ln in lines if "monitor:" in ln)
