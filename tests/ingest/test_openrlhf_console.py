"""OpenRLHF console logs. No public real log exists, so these files follow the documented format:
``logger.info(f"✨ Global step {n}: {status}")`` through openrlhf's logging format
``%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s`` (research/framework_metrics.md §3.3)."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path

import pytest

from rlvitals import load
from rlvitals.cli import main
from rlvitals.ingest import SkipLog, SourceMeta, find_reader
from rlvitals.ingest.formats.openrlhf_console import read

STEP1 = (
    "{'policy_loss': 0.0123, 'actor_lr': 5e-07, 'actor_grad_norm': 0.8, 'ppo_clip_ratio': 0.002, "
    "'ppo_kl': 1.2e-05, 'kl': 0.0011, 'reward': 0.5, 'score': 0.5, 'return': 0.49, "
    "'group_reward_std': 0.31, 'response_length': 312.5, 'truncated': 0.01, 'total_length': 420.0, "
    "'rollout/reward_mean': 0.5, 'rollout/reward_std': 0.5, 'rollout/response_length_mean': 312.5, "
    "'rollout/truncated_rate': 0.01, 'rollout/num_samples': 256, 'timing/make_experience': 40.1, "
    "'timing/ppo_train': 12.3, 'timing/step_total': 52.4, 'critic_loss': 0.21, 'values': 0.3, "
    "'critic_lr': 9e-06, 'generated_samples': ['<|im_start|>user\\nWhat is 2+2?<|im_end|>\\n4', 1.0]}"
)
STEP2 = (
    "{'policy_loss': tensor(0.0101, device='cuda:0'), 'actor_lr': 1e-06, 'ppo_kl': np.float64(nan), "
    "'kl': nan, 'reward': 0.55, 'critic_loss': tensor(0.19, device='cuda:0', dtype=torch.float32)}"
)
EVAL2 = (
    "{'eval_openai/gsm8k_pass1': 0.61, 'eval_openai/gsm8k_pass4': 0.8, "
    "'eval_response_length_mean': 290.2, 'eval_truncated_rate': 0.0, 'eval_num_samples': 5276}"
)
LINES = [
    "[2025-08-13 19:20:01,123] [INFO] [real_accelerator.py:254:get_accelerator] Setting ds_accelerator to cuda",
    "INFO 08-13 19:20:05 llm_engine.py:237] Initializing a V1 LLM engine with config: {'model': 'Qwen'}",
    "Episode [1/1]:   0%|          | 0/20 [00:00<?, ?it/s]",
    "Train epoch [1/1]: 100%|██████████| 4/4 [00:12<00:00, act_loss=0.0123, reward=0.5, return=0.5, "
    "gen_len=312, tot_len=420, kl=0.0011, act_lr=5e-7, grad_norm=0.8]",
    f"INFO 08-13 19:25:45 ppo_trainer.py:547] ✨ Global step 1: {STEP1}",
    f"INFO 08-13 19:29:58 ppo_trainer.py:547] ✨ Global step 2: {STEP2}",
    f"INFO 08-13 19:31:02 ppo_trainer.py:560] ✨ Evaluation completed in 0:01:02, global_step 2, "
    f"eval_metrics: {EVAL2}",
    "INFO 08-13 19:35:10 ppo_trainer.py:547] ✨ Global step 3: {'policy_loss': 0.01, 'kl': tensor(0.0",
    "\x1b[36m(PPOTrainer pid=4242)\x1b[0m INFO 08-13 19:40:00 ppo_trainer.py:547] ✨ Global step 4: "
    "{'policy_loss': -0.02, 'actor_lr': 1e-06, 'reward': inf}\x1b[0m",
    "INFO 08-13 19:45:00 ppo_trainer.py:547] ✨ Global step 5: {'generated_samples': ['text', 0.0]}",
]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "openrlhf.log"
    body = "\n".join(LINES).encode()
    path.write_bytes(body.replace(b"Initializing", b"Initializ\xff\xfeing") + b"\n")
    return path


def test_records(log: Path) -> None:
    meta, skips = SourceMeta(format="openrlhf-console"), SkipLog()
    records = list(read(log, meta, skips))
    assert [(r.step, r.where) for r in records] == [(1, f"{log}:5"), (2, f"{log}:6"), (2, f"{log}:7"),
                                                    (4, f"{log}:9")]
    first = records[0].values
    assert len(first) == 24 and "generated_samples" not in first
    assert first["policy_loss"] == 0.0123 and first["rollout/num_samples"] == 256.0
    second = records[1].values
    assert second["policy_loss"] == 0.0101 and second["critic_loss"] == 0.19
    assert math.isnan(float(second["ppo_kl"])) and math.isnan(float(second["kl"]))
    assert records[2].values == {"eval_openai/gsm8k_pass1": 0.61, "eval_openai/gsm8k_pass4": 0.8,
                                 "eval_response_length_mean": 290.2, "eval_truncated_rate": 0.0,
                                 "eval_num_samples": 5276.0}
    assert records[3].values == {"policy_loss": -0.02, "actor_lr": 1e-06, "reward": math.inf}
    assert meta.framework == "openrlhf"


def test_skips_name_file_and_line(log: Path) -> None:
    skips = SkipLog()
    list(read(log, SourceMeta(format="openrlhf-console"), skips))
    where = re.escape(str(log))
    assert skips.count == 2
    assert re.match(rf"^{where}:8: the training dict of global step 3 is not a Python dict repr "
                    r"\(at character \d+: .*\); the line was skipped$", skips.reasons[0])
    assert re.match(rf"^{where}:10: the training dict of global step 5 holds no metric value; "
                    "the line was skipped$", skips.reasons[1])


def test_load_merges_evaluation_into_the_step(log: Path) -> None:
    assert find_reader(log).format == "openrlhf-console"
    run = load(log)[0]
    assert (run.format, run.framework) == ("openrlhf-console", "openrlhf")
    assert list(run.steps) == [1, 2, 4] and list(run.train_steps) == [1, 2, 4]
    raw = run.raw.to_dicts()
    assert raw[1]["eval_openai/gsm8k_pass1"] == 0.61 and raw[1]["reward"] == 0.55
    assert raw[0]["eval_openai/gsm8k_pass1"] is None
    assert set(run.raw.columns) - {"step"} == set(run.unmapped) | set(run.key_map)


def test_cli_inspect_json(log: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["inspect", "--json", str(log)], out=out, err=err) == 0
    got = json.loads(out.getvalue())
    assert (got["framework"], got["format"], got["steps"]) == ("openrlhf", "openrlhf-console", 3)
    assert got["skipped"]["count"] == 2


def test_first_step_after_a_long_startup_is_found(tmp_path: Path) -> None:
    path = tmp_path / "late.log"
    noise = "".join(f"INFO 08-13 19:20:05 loader.py:12] loading shard {i}\n" for i in range(3000))
    path.write_text(noise + f"INFO 08-13 19:25:45 ppo_trainer.py:547] ✨ Global step 1: {STEP2}\n")
    assert len(noise) > 64 << 10
    assert find_reader(path).format == "openrlhf-console"
    assert [r.step for r in read(path, SourceMeta(format="x"), SkipLog())] == [1]


def test_a_log_that_ends_in_a_traceback_gets_the_crash(tmp_path: Path) -> None:
    # constructed (no public OpenRLHF log of a crash was found): two global steps, then the driver's traceback
    path = tmp_path / "train.log"
    path.write_text(
        "INFO ppo_trainer.py:547] ✨ Global step 1: {'policy_loss': 0.1, 'kl': 0.0}\n"
        "INFO ppo_trainer.py:547] ✨ Global step 2: {'policy_loss': 0.2, 'kl': 0.01}\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/openrlhf/trainer/ppo_trainer.py", line 210, in fit\n'
        "    status = self.ppo_train(steps)\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    run = load(path)[0]
    assert run.crash is not None and run.crash.oom and run.crash.last_step == 2
    assert run.crash.origin == "openrlhf/trainer/ppo_trainer.py:210 in fit"


def test_a_log_holding_only_an_openrlhf_traceback_is_read(tmp_path: Path) -> None:
    # constructed: died in the actor's init, before its first global step
    path = tmp_path / "died.log"
    path.write_text("Traceback (most recent call last):\n"
                    '  File "/opt/openrlhf/cli/train_ppo_ray.py", line 40, in train\n'
                    "ModuleNotFoundError: No module named 'vllm'\n")
    assert find_reader(path).format == "openrlhf-console"
    run = load(path)[0]
    assert (run.framework, len(run.train_steps)) == ("openrlhf", 0)
    assert run.crash is not None and (run.crash.kind, run.crash.message) == ("import", "No module named 'vllm'")
