"""The TRL callback speaks the Monitor's language: its refusals of ``log_keys`` carry their Chinese, and what it
tells the user while a trainer runs (no completion files, not attached, a completion file TRL did not write)
is printed in Chinese by a ``lang="zh"`` Monitor. The callback's hooks are called here as the Trainer calls
them, with the arguments transformers hands every callback; no trainer is needed for these messages.
"""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from optional import require

from rlvitals.errors import UnknownMetricError

pytestmark = pytest.mark.trl  # the module imports transformers, which the fast inner loop leaves out


@pytest.fixture(autouse=True)
def _transformers() -> None:
    require(("transformers",), "the TRL callback", "pip install 'rlvitals[trl]'")


def _state(step: int) -> Any:
    return SimpleNamespace(is_world_process_zero=True, global_step=step)


def test_unknown_log_keys_are_refused_in_chinese() -> None:
    from rlvitals.integrations.trl import log_key_names

    with pytest.raises(UnknownMetricError, match=r"^log_keys: 'pass_at_4' is not a metric rlvitals knows") as caught:
        log_key_names(["pass@1", "pass_at_4"])
    said = caught.value.text("zh")
    assert said.startswith("log_keys：'pass_at_4' 不是 rlvitals 认识的指标；它能记录的 rollout 指标名形如 "
                           "group/zero_std/share、pass@1、diversity/distinct_2、diversity/duplicate_rate、pass@4、")
    assert said.endswith("rollout/format_compliance（完整列表见 docs/rollouts.md 的 'Per-step keys' 一节，或运行 "
                         "'rlvitals explain --list'）；log_keys='all' 会记录 completions 给出的每一个键")
    with pytest.raises(UnknownMetricError) as caught:
        log_key_names("pass@1")
    assert caught.value.text("zh") == ("log_keys='pass@1'：应为指标名的列表，例如 ['group/zero_std/share', 'pass@1', "
                                       "'diversity/distinct_2', 'diversity/duplicate_rate']，或者 'all'")


def test_what_the_callback_tells_a_chinese_monitor(tmp_path: Path) -> None:
    from rlvitals.integrations.trl import RlvitalsCallback

    err = io.StringIO()
    cb = RlvitalsCallback(err=err, lang="zh")
    try:
        no_files = SimpleNamespace(log_completions=False, output_dir=str(tmp_path))
        cb.on_log(no_files, _state(1), None, logs={"loss": 1.0})
        files = SimpleNamespace(log_completions=True, output_dir=str(tmp_path))
        cb.on_log(files, _state(2), None, logs={"loss": 0.9})
        cb.on_step_begin(files, _state(2), None)  # the completion file of step 2 should be there now
        cb.on_log(SimpleNamespace(log_completions=True, output_dir=None), _state(3), None, logs={"loss": 0.8})
    finally:
        cb.monitor.close()
    missing = tmp_path / "completions" / "completions_00002.parquet"
    said = err.getvalue().splitlines()
    assert "rlvitals：GRPOConfig(log_completions=False)：TRL 不写 completion 文件，因此不会计算 rollout " \
           "指标；请传入 log_completions=True" in said
    assert "rlvitals：这个 callback 没有用 rlvitals.integrations.trl.attach(trainer) 挂到 trainer 上：" \
           "rlvitals/... 指标不会写入 trainer 的 logger" in said
    assert f"rlvitals：{missing}：TRL 没有写出这个 completion 文件；第 2 步的 rollout 指标缺失" in said
    assert any(line.startswith("rlvitals：TRL callback 在第 3 步出错：TypeError: ") for line in said), said
    assert cb.logged_steps == [1, 2, 3]  # the Trainer goes on


def test_an_english_monitor_keeps_the_english(tmp_path: Path) -> None:
    from rlvitals.integrations.trl import RlvitalsCallback

    err = io.StringIO()
    cb = RlvitalsCallback(err=err)
    try:
        cb.on_log(SimpleNamespace(log_completions=False, output_dir=str(tmp_path)), _state(1), None, logs={"x": 1.0})
    finally:
        cb.monitor.close()
    assert "rlvitals monitor: GRPOConfig(log_completions=False): TRL writes no completion files, so no rollout " \
           "metrics are computed; pass log_completions=True" in err.getvalue().splitlines()
