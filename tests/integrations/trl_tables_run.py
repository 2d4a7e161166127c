"""A real ``GRPOTrainer`` (the tiny policy of :mod:`integrations.test_trl`) with ``log_completions=True`` and
``report_to=["wandb", "trackio", "clearml"]``, and Aim's own Hugging Face callback (``aim.hugging_face.AimCallback``,
repository ``OUT/aim``), in a process of its own so that W&B (offline), Trackio, ClearML (offline) and Aim write only
under ``OUT``: ``python trl_tables_run.py OUT``. TRL writes its completion files to ``OUT/grpo/completions`` and the
same completions as a table to W&B and to Trackio; the callbacks log the metrics to all four."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

STEPS = 3


def main(out: Path) -> None:
    os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_CONSOLE="off", WANDB_DISABLE_GIT="true",
                      WANDB_DISABLE_CODE="true", WANDB_DIR=str(out), WANDB_CONFIG_DIR=str(out / ".wandb-config"),
                      WANDB_CACHE_DIR=str(out / ".wandb-cache"), WANDB_DATA_DIR=str(out / ".wandb-data"),
                      TRACKIO_DIR=str(out / "trackio"), HF_HUB_OFFLINE="1",
                      CLEARML_OFFLINE_MODE="1", CLEARML_CACHE_DIR=str(out / "clearml"), HOME=str(out / "home"))
    os.environ.pop("WANDB_API_KEY", None)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from aim.hugging_face import AimCallback
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from integrations.test_trl import _policy, accuracy, odd_capitals
    from rlvitals.synthetic.sampler import prompt_messages
    from rlvitals.synthetic.word_problems import make_problems

    model, tokenizer, _ = _policy(None)  # type: ignore[arg-type]  # the tiny policy needs no cache folder
    data = Dataset.from_list([{"prompt": prompt_messages(p), "answer": p.target} for p in make_problems(2, seed=5)])
    # Aim 3.29's system params list the packages through pkg_resources, which setuptools 81+ no longer has
    aim = AimCallback(repo=str(out / "aim"), experiment="grpo", log_system_params=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning)
        args = GRPOConfig(output_dir=str(out / "grpo"), max_steps=STEPS, per_device_train_batch_size=8,
                          num_generations=4, max_completion_length=16, temperature=0.7, learning_rate=1e-5,
                          logging_steps=1, report_to=["wandb", "trackio", "clearml"], project="rlvitals",
                          run_name="grpo", save_strategy="no", use_cpu=True, seed=0, disable_tqdm=True,
                          dataloader_num_workers=0, log_completions=True, reward_weights=[1.0, 0.5])
        trainer = GRPOTrainer(model=model, reward_funcs=[accuracy, odd_capitals], args=args, train_dataset=data,
                              processing_class=tokenizer, callbacks=[aim])
        trainer.train()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
