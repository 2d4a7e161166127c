"""Capture what OpenRLHF's own DPO, RM, SFT (and, on 0.9.5, KTO) trainers print and log, on a CPU.

The captures under ``tests/ingest/data/openrlhf/`` were made by this script: rlvitals' readers are
tested on files the real writer wrote. Nothing of OpenRLHF is copied here: the script imports the
``openrlhf`` package from PyPI and runs its own command-line entry points
(``openrlhf.cli.train_dpo`` etc., as ``python -m`` would) with a tiny randomly initialised Llama,
a tokenizer trained here on the examples, and a few dozen arithmetic examples written here.

What is replaced, and why (the only pieces; the trainers' fit loops, losses, tqdm bars and W&B /
TensorBoard logging are OpenRLHF's, and the optimiser steps are DeepSpeed's own engine):

* ``DeepspeedStrategy.setup_distributed`` builds its device mesh with ``init_device_mesh("cuda", ...)``
  and calls ``torch.cuda.set_device``: the stand-in does the same on ``"cpu"`` (gloo, world size 1).
* ``DeepspeedStrategy.all_reduce`` / ``all_gather`` move each value to ``torch.cuda.current_device()``
  before the collective: the stand-in is the same code without the move (the value still goes
  through a float32 tensor and ``dist.all_reduce``, as on a GPU).
* ``torch_dist_barrier_and_cuda_sync`` (used when a model is saved) also calls
  ``torch.cuda.synchronize()``: the stand-in only does the barrier.
* ``flash_attn`` cannot be installed without CUDA; OpenRLHF imports four of its functions at module
  level for sample packing and ring attention, which these runs do not use. Stand-ins that raise if
  ever called are put in ``sys.modules``.
* KTO (0.9.5 only): its fit loop itself moves each batch with ``.to(torch.cuda.current_device())``;
  ``torch.cuda.current_device`` is made to return the CPU device in that run.
* DeepSpeed runs on its CPU accelerator (``DS_ACCELERATOR=cpu``, gloo).

Rerun (a scratch venv outside the repository; torch's CPU wheel first, or pip pulls a CUDA build)::

    python3 -m venv /tmp/orl-venv
    /tmp/orl-venv/bin/pip install torch==2.13.0
    /tmp/orl-venv/bin/pip install --no-deps openrlhf==0.11.2
    /tmp/orl-venv/bin/pip install transformers==5.15.0 datasets tqdm einops wandb tensorboard sympy \\
        pylatexenc torchdata accelerate hjson ninja py-cpuinfo msgpack
    /tmp/orl-venv/bin/pip install --no-deps peft
    /tmp/orl-venv/bin/pip install --no-build-isolation --no-deps deepspeed==0.19.5
    /tmp/orl-venv/bin/python scripts/captures/openrlhf_trainers.py --work /tmp/orl-work \\
        --out tests/ingest/data/openrlhf dpo rm sft

``--out`` copies each trainer's console logs, W&B run (its ``.wandb`` file and ``files/``) and
TensorBoard event file to ``<out>/<trainer>-<version>/`` and writes its ``source.toml``.

KTO, PRM and KD need openrlhf==0.9.5 (the last release with their trainers) in a second venv, then
``... kto prm kd``.
``... samples`` writes OpenRLHF's PPO samples (``train/generated_samples``) through its own ``WandbLogger``
(a table) and ``TensorboardLogger`` (a text a step) to ``<out>/ppo-samples-<version>/`` (see :func:`samples`;
``--loggers tensorboard`` runs and saves the TensorBoard one only).
Each trainer runs twice: once logging to W&B in offline mode, once to TensorBoard (OpenRLHF writes
TensorBoard only when W&B is off). stdout and stderr go to one file, as ``> train.log 2>&1`` would.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
from pathlib import Path

#: each trainer: its CLI module, the dataset rows it reads, and its own command-line options
CLI = {"dpo": "openrlhf.cli.train_dpo", "rm": "openrlhf.cli.train_rm", "sft": "openrlhf.cli.train_sft",
       "kto": "openrlhf.cli.train_kto", "prm": "openrlhf.cli.train_prm", "kd": "openrlhf.cli.train_kd"}
#: the trainers of 0.9.5 and before, with flat flags and fit loops that call torch.cuda.current_device()
OLD = ("kto", "prm", "kd")
TRAIN_ROWS, EVAL_ROWS = 32, 8
MICRO_BATCH, BATCH = 1, 4  # gradient accumulation 4 at world size 1


# ---------------------------------------------------------------------------------------------
# the child: one trainer's CLI with the CPU stand-ins


def _stub_flash_attn() -> None:
    import importlib.machinery
    import types

    def unavailable(*_a: object, **_k: object) -> None:
        raise RuntimeError("flash_attn stand-in: this capture does not use sample packing or ring attention")

    root = types.ModuleType("flash_attn")
    padding = types.ModuleType("flash_attn.bert_padding")
    utils = types.ModuleType("flash_attn.utils")
    distributed = types.ModuleType("flash_attn.utils.distributed")
    for name in ("index_first_axis", "pad_input", "rearrange", "unpad_input"):
        setattr(padding, name, unavailable)
    distributed.all_gather = unavailable  # type: ignore[attr-defined]
    root.bert_padding, root.utils, utils.distributed = padding, utils, distributed  # type: ignore[attr-defined]
    stubs = {"flash_attn": root, "flash_attn.bert_padding": padding, "flash_attn.utils": utils,
             "flash_attn.utils.distributed": distributed}
    for name, stub in stubs.items():
        # a spec, no version, no file: transformers' availability check reads "not installed"
        stub.__spec__ = importlib.machinery.ModuleSpec(name, None)
    sys.modules.update(stubs)


def _cpu_strategy() -> None:
    import deepspeed
    import openrlhf.utils.deepspeed as package
    import torch
    import transformers
    from openrlhf.utils.deepspeed import deepspeed as module
    from torch import distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    class CPUStrategy(module.DeepspeedStrategy):  # type: ignore[misc,name-defined]
        def setup_distributed(self, timeout=None) -> None:  # type: ignore[no-untyped-def]
            transformers.set_seed(self.seed)
            deepspeed.init_distributed(dist_backend="gloo")
            self.world_size = dist.get_world_size()
            dp_size = self.world_size // self.ring_attn_size // self.ds_tensor_parallel_size
            self.ds_device_mesh = init_device_mesh("cpu", (dp_size, self.ring_attn_size, self.ds_tensor_parallel_size),
                                                   mesh_dim_names=("dp", "sp", "tp"))
            self.setup_ring_attn(self.ds_device_mesh)
            self.accumulated_gradient = (self.train_batch_size * self.ring_attn_size * self.ds_tensor_parallel_size
                                         // self.micro_train_batch_size // self.world_size)

        def all_reduce(self, data, op="mean"):  # type: ignore[no-untyped-def]
            if isinstance(data, dict):
                return {k: self.all_reduce(v, op) for k, v in data.items()}
            is_tensor = isinstance(data, torch.Tensor)
            if not is_tensor:
                data = torch.Tensor([data])
            if op == "mean":
                data /= self.world_size
            dist.all_reduce(data, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)
            return data if is_tensor else data.item()

        def all_gather(self, data):  # type: ignore[no-untyped-def]
            if isinstance(data, dict):
                return {k: self.all_gather(v) for k, v in data.items()}
            if not isinstance(data, torch.Tensor):
                data = torch.Tensor([data])
            out = [torch.zeros_like(data) for _ in range(self.world_size)]
            dist.all_gather(out, data)
            return torch.cat(out)

    def barrier() -> None:
        dist.barrier()

    package.DeepspeedStrategy = CPUStrategy
    module.torch_dist_barrier_and_cuda_sync = barrier


def child(trainer: str, argv: list[str]) -> None:
    import runpy

    _stub_flash_attn()
    _cpu_strategy()
    if trainer in OLD:  # 0.9.5's KTO, PRM and KD fit loops move each batch to torch.cuda.current_device() themselves
        import torch

        torch.cuda.current_device = lambda: torch.device("cpu")
    sys.argv = [CLI[trainer]] + argv
    runpy.run_module(CLI[trainer], run_name="__main__", alter_sys=True)


# ---------------------------------------------------------------------------------------------
# the parent: the tiny model, the data, the runs


def _rows(n: int, seed: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.randint(1, 20), rng.randint(1, 20)
        wrong = a + b + rng.choice([-3, -2, -1, 1, 2, 3])
        out.append((f"What is {a} plus {b}?", f"{a} plus {b} is {a + b}.", f"{a} plus {b} is {wrong}."))
    return out


def write_data(work: Path) -> None:
    for split, n, seed in (("train", TRAIN_ROWS, 1), ("test", EVAL_ROWS, 2)):
        rows = _rows(n, seed)
        pref = [{"prompt": p, "chosen": c, "rejected": r} for p, c, r in rows]
        sft = [{"input": p, "output": c} for p, c, _ in rows]
        kto = [x for p, c, r in rows for x in ({"prompt": p, "response": c, "label": True},
                                               {"prompt": p, "response": r, "label": False})]
        # a process reward: each step of the answer ends in the placeholder, labelled + (right) or - (wrong)
        prm = [x for p, c, r in rows for x in ({"input": f"{p} {c} <unk> So that is it. <unk>", "label": ["+", "+"]},
                                               {"input": f"{p} {r} <unk> So that is it. <unk>", "label": ["-", "-"]})]
        for name, data in (("pref", pref), ("sft", sft), ("kto", kto), ("prm", prm)):
            folder = work / "data" / name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{split}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in data))


def write_model(work: Path) -> Path:
    """A 2-layer Llama with random weights and a byte-level BPE trained on the examples, saved locally."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = work / "tiny-llama"
    texts = [t for row in _rows(TRAIN_ROWS, 1) + _rows(EVAL_ROWS, 2) for t in row]
    texts += ["User: ", "Assistant: "]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, tie_word_embeddings=False)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def _options(trainer: str, model: Path, work: Path, folder: Path, logger: str) -> list[str]:
    data = work / "data" / {"dpo": "pref", "rm": "pref", "sft": "sft", "kto": "kto", "prm": "prm", "kd": "sft"}[trainer]
    if trainer in OLD:  # 0.9.5: flat flags (the dotted ones came in 0.10.2); KTO packs >= 2 samples a batch
        micro, batch = ("2", "8") if trainer == "kto" else ("1", "4")
        flags = ["--pretrain", str(model), "--dataset", str(data / "train.jsonl"), "--eval_dataset",
                 str(data / "test.jsonl"), "--eval_split", "train", "--micro_train_batch_size", micro,
                 "--train_batch_size", batch, "--max_epochs", "2", "--max_len", "64", "--attn_implementation",
                 "eager", "--zero_stage", "2", "--logging_steps", "1", "--learning_rate", "3e-3",
                 "--save_path", str(work / "ckpt" / trainer), "--wandb_run_name", f"{trainer}_capture"]
        flags += {"kto": ["--beta", "0.1", "--input_key", "prompt", "--output_key", "response", "--label_key", "label"],
                  "prm": ["--input_key", "input", "--label_key", "label", "--placeholder_token", "<unk>",
                          "--reward_tokens", "+", "-"],
                  "kd": ["--teacher_model", str(model), "--input_key", "input", "--output_key", "output"]}[trainer]
        return flags + (["--use_wandb", "offline-capture-no-key-used"] if logger == "wandb"
                        else ["--use_tensorboard", str(folder / "tensorboard")])
    common = ["--model.model_name_or_path", str(model), "--data.dataset", str(data / "train.jsonl"),
              "--eval.dataset", str(data / "test.jsonl"), "--eval.split", "train",
              "--train.micro_batch_size", str(MICRO_BATCH), "--train.batch_size", str(BATCH),
              "--train.max_epochs", "2", "--data.max_len", "64", "--ds.attn_implementation", "eager",
              "--ds.zero_stage", "2", "--logger.logging_steps", "1", "--adam.lr", "3e-3",
              "--ckpt.output_dir", str(work / "ckpt" / trainer), "--logger.wandb.run_name", f"{trainer}_capture"]
    own = {"dpo": ["--data.prompt_key", "prompt", "--model.beta", "0.1"],
           "rm": ["--data.prompt_key", "prompt"],
           "sft": ["--data.input_key", "input", "--data.output_key", "output"]}[trainer]
    return common + own + (["--logger.wandb.key", "offline-capture-no-key-used"] if logger == "wandb"
                           else ["--logger.tensorboard_dir", str(folder / "tensorboard")])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(trainer: str, logger: str, model: Path, work: Path) -> Path:
    """One run of ``trainer`` logging to ``logger`` (wandb | tensorboard); its folder under ``work``."""
    folder = work / "runs" / f"{trainer}-{logger}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    options = _options(trainer, model, work, folder, logger)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "HF_"))}
    env.update(WANDB_MODE="offline", WANDB_DIR=str(folder), WANDB_API_KEY="x" * 40, HF_HUB_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(work / "hf-home"),
               DS_ACCELERATOR="cpu", RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(_free_port()), PYTHONUNBUFFERED="0", TOKENIZERS_PARALLELISM="false")
    with (folder / "train.log").open("wb") as log:
        code = subprocess.call([sys.executable, __file__, "--child", trainer, *options], cwd=folder, env=env,
                               stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    print(f"{trainer} {logger}: exit {code}, {folder / 'train.log'}")
    return folder


#: what each capture's source.toml says about the OpenRLHF release it ran
RELEASES = {
    "0.11.2": {"tag": "v0.11.2", "wheel_sha256": "c969d70db03a70724c3d8a5a01186c6e0728bce624fb3dff95e39b5396acefa6",
               "commit": "", "commit_note": "v0.11.2 is newer than the mirrored snapshot (its newest tag is v0.11.0 = "
               "3c3be6234e0cb353e76bb8019947db9dfe99fca7); the wheel's dpo/rm trainers differ from v0.11.0 only in "
               "the evaluation mean (per sample, not per batch), its sft trainer in the optimizer-step windows"},
    "0.9.5": {"tag": "v0.9.5", "wheel_sha256": "d82cc62d045a4ef307509febeeded2992e435cd118118fc9cb5680d63ee47fae",
              "commit": "c0e2ee2473cd115863630599cc3d51917d4b7c3e", "commit_note": "the wheel's trainer, CLI, "
              "loss and strategy files are identical to the tag's"},
}
TRAINERS = {"dpo": "DPOTrainer", "rm": "RewardModelTrainer", "sft": "SFTTrainer", "kto": "KTOTrainer",
            "prm": "ProcessRewardModelTrainer", "kd": "KDTrainer"}
REPLACED = [
    "DeepspeedStrategy.setup_distributed: init_device_mesh('cuda') and torch.cuda.set_device -> the same on 'cpu' "
    "(gloo, world size 1)",
    "DeepspeedStrategy.all_reduce/all_gather: the same code without the move to torch.cuda.current_device()",
    "torch_dist_barrier_and_cuda_sync: the barrier without torch.cuda.synchronize()",
    "flash_attn (needs CUDA to install): stand-ins in sys.modules that raise if called (packing and ring "
    "attention, not used here)",
]
KTO_REPLACED = ("torch.cuda.current_device (called in the 0.9.5 KTO, PRM and KD fit loops and KTOLoss): returns the "
                "CPU device")


def _toml(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string or list of strings is a TOML one


def save(trainer: str, work: Path, out: Path) -> Path:
    """Copy the two runs' files into ``out/<trainer>-<version>/`` and write its source.toml."""
    from importlib.metadata import version

    release = version("openrlhf")
    dest = out / f"{trainer}-{release}"
    shutil.rmtree(dest, ignore_errors=True)
    for logger in ("wandb", "tensorboard"):
        run_dir, target = work / "runs" / f"{trainer}-{logger}", dest / f"{logger}-run"
        kept = [run_dir / "train.log"]
        if logger == "wandb":
            run = next((run_dir / "wandb").glob("offline-run-*"))
            kept += [run / n for n in ("files/output.log", "files/requirements.txt")] + list(run.glob("run-*.wandb"))
        else:
            kept += list((run_dir / "tensorboard").rglob("events.out.tfevents.*"))
        for f in kept:
            (target / f.relative_to(run_dir)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, target / f.relative_to(run_dir))
    how = (f"openrlhf's own CLI module ({CLI[trainer]}) run as __main__ on a CPU with DeepSpeed "
           f"{version('deepspeed')} on its CPU accelerator: a 2-layer random Llama and a BPE "
           f"tokenizer made by the script, {TRAIN_ROWS} training and {EVAL_ROWS} evaluation "
           "arithmetic prompts with a right and a wrong answer (KTO: each answer its own row, labelled; PRM: "
           "each answer two steps ending in the placeholder <unk>, labelled + or -; KD: the right answers, the "
           "model its own teacher), 2 epochs, gradient accumulation 4 (micro-batch 1 of batch 4; KTO 2 of 8); "
           "run twice, logging to W&B offline (wandb-run/) and to TensorBoard (tensorboard-run/), "
           "stdout and stderr of each into one file (train.log), as '> train.log 2>&1' would")
    _source(dest, TRAINERS[trainer], release, how, REPLACED + ([KTO_REPLACED] if trainer in OLD else []))
    return dest


def _source(dest: Path, writer: str, release: str, how: str, replaced: list[str]) -> None:
    """``dest/source.toml``: the release, what made the files and what was replaced, each file's hash."""
    import hashlib
    from importlib.metadata import version

    info = RELEASES[release]
    lines = [f"writer = {_toml(writer)}", 'repository = "OpenRLHF/OpenRLHF"',
             f"package = {_toml(f'openrlhf=={release}')}",
             f"tag = {_toml(info['tag'])}", f"commit = {_toml(info['commit'])}",
             f"commit_note = {_toml(info['commit_note'])}", f"wheel_sha256 = {_toml(info['wheel_sha256'])}",
             'licence = "Apache-2.0"', 'produced_by = "scripts/captures/openrlhf_trainers.py"',
             "how = " + _toml(how), "replaced = " + _toml(replaced),
             "versions = " + _toml([f"{p}=={version(p)}" for p in ("torch", "transformers", "deepspeed", "wandb",
                                                                     "tensorboard", "tqdm")]), ""]
    for f in sorted(p for p in dest.rglob("*") if p.is_file() and p.name != "source.toml"):
        data = f.read_bytes()
        lines += ["[[file]]", f"saved_as = {_toml(str(f.relative_to(dest)))}",
                  f"sha256 = {_toml(hashlib.sha256(data).hexdigest())}", f"bytes = {len(data)}", ""]
    (dest / "source.toml").write_text("\n".join(lines), encoding="utf-8")


def _sample_rows() -> list[tuple[int, str, float]]:
    """The six samples both loggers are given: (global step, decoded text, reward), as the PPO trainer passes
    ``[decoded sequence, reward]`` — an arithmetic prompt with a right (reward 1) or wrong (0) answer."""
    rows = []
    for step, (prompt, right, wrong) in enumerate(_rows(6, 3), 1):
        text, reward = (right, 1.0) if step % 3 else (wrong, 0.0)
        rows.append((step, f"User: {prompt}\nAssistant: {text}</s>", reward))
    return rows


def _samples_wandb(folder: Path) -> Path:
    """OpenRLHF's own ``WandbLogger`` (offline) given the samples; its run folder."""
    from types import SimpleNamespace

    from openrlhf.utils.logging_utils import WandbLogger

    os.environ.update(WANDB_MODE="offline", WANDB_DIR=str(folder), WANDB_API_KEY="x" * 40, WANDB_SILENT="true")
    wandb_args = SimpleNamespace(key="offline-capture-no-key-used", org=None, group=None,
                                 project="openrlhf_train_ppo", run_name="ppo_samples_capture")
    logger = WandbLogger(SimpleNamespace(logger=SimpleNamespace(wandb=wandb_args)))
    for step, text, reward in _sample_rows():
        logger.log_train(step, {"generated_samples": [text, reward]})
    logger.close()
    return next((folder / "wandb").glob("offline-run-*"))


def _samples_tensorboard(folder: Path) -> Path:
    """OpenRLHF's own ``TensorboardLogger`` (what its PPO trainer logs with when W&B is off) given the same
    samples; its ``tensorboard_dir`` (the run is the folder ``<run_name>/`` inside it, as OpenRLHF makes it)."""
    from types import SimpleNamespace

    from openrlhf.utils.logging_utils import TensorboardLogger

    tb_dir = folder / "tensorboard"
    args = SimpleNamespace(logger=SimpleNamespace(tensorboard_dir=str(tb_dir),
                                                  wandb=SimpleNamespace(run_name="ppo_samples_capture")))
    logger = TensorboardLogger(args)
    for step, text, reward in _sample_rows():
        logger.log_train(step, {"generated_samples": [text, reward]})
    logger.close()
    return tb_dir


def samples(out: Path | None, work: Path, loggers: list[str]) -> Path:
    """OpenRLHF's own ``WandbLogger`` and ``TensorboardLogger`` (the PPO trainer's loggers) writing its
    ``train/generated_samples`` for 6 global steps: W&B offline, a table; TensorBoard, a text a step. No PPO
    run: that needs Ray and vLLM on GPUs. The samples are the script's (:func:`_sample_rows`), the same for
    both loggers; the table, the text and their layouts are the loggers'. Only the loggers named are run and
    saved (``--loggers tensorboard`` adds the TensorBoard capture beside a W&B one already saved)."""
    from importlib.metadata import version

    made: dict[str, Path] = {}
    for logger in loggers:
        folder = work / "runs" / f"samples-{logger}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        made[logger] = _samples_wandb(folder) if logger == "wandb" else _samples_tensorboard(folder)
    if out is None:
        return work / "runs"
    dest = out / f"ppo-samples-{version('openrlhf')}"
    for logger, run in made.items():
        target = dest / f"{logger}-run"
        shutil.rmtree(target, ignore_errors=True)
        if logger == "wandb":
            kept = [f for f in run.rglob("*") if f.is_file() and f.parts[len(run.parts)] in ("files",)
                    and f.name != "wandb-metadata.json"] + list(run.glob("run-*.wandb"))
            base = run.parent
        else:
            kept, base = list(run.rglob("events.out.tfevents.*")), run
        for f in kept:
            (target / f.relative_to(base)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, target / f.relative_to(base))
    _source(dest, "WandbLogger, TensorboardLogger", version("openrlhf"),
            "openrlhf's own loggers (openrlhf/utils/logging_utils.py, what its PPO trainer logs with), each given "
            "log_train(step, {'generated_samples': [text, reward]}) at global steps 1-6 with the same six samples: "
            "WandbLogger in offline mode (wandb-run/: the table train/generated_samples, each logged table "
            "repeating the rows before it) and TensorboardLogger (tensorboard-run/<run_name>/: a text summary "
            "train/generated_samples a step, the logger's own 'Sample:\\n{text}\\n\\nReward: {reward:.4f}', its "
            "\\n two characters, not a newline, as the wheel writes it); the table, the texts and their layouts are "
            "the loggers'; the samples are the script's (an arithmetic prompt and answer as one decoded text, "
            "reward 1 for a right answer and 0 for a wrong one), not a PPO run's: PPO needs Ray and vLLM on GPUs",
            ["none: the loggers need only wandb and torch's SummaryWriter (tensorboard); no trainer was run"])
    return dest


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/orl-work"))
    parser.add_argument("--loggers", default="wandb,tensorboard")
    parser.add_argument("--out", type=Path, help="copy the captures here (tests/ingest/data/openrlhf)")
    parser.add_argument("--no-run", action="store_true", help="only copy the runs already in --work to --out")
    parser.add_argument("trainers", nargs="*", default=["dpo", "rm", "sft"])
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.trainers == ["samples"]:
        print(f"saved {samples(args.out, args.work, args.loggers.split(','))}")
        return
    if not args.no_run:
        write_data(args.work)
    model = args.work / "tiny-llama" if args.no_run else write_model(args.work)
    for trainer in args.trainers:
        for logger in [] if args.no_run else args.loggers.split(","):
            run(trainer, logger, model, args.work)
        if args.out is not None:
            print(f"saved {save(trainer, args.work, args.out)}")


if __name__ == "__main__":
    main()
