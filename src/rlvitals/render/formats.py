"""What ``rlvitals formats`` prints: each log format the readers know and what it is, in English (the
readers' own words) or Chinese."""

from __future__ import annotations

from collections.abc import Iterable

from rich.cells import cell_len

__all__ = ["FORMATS_ZH", "render_formats"]

#: each reader's format in Chinese (a reader added without its line here fails tests/render/test_formats.py)
FORMATS_ZH = {
    "wandb-offline": "W&B 的离线运行记录（run-<id>.wandb），或存放多个运行记录的 wandb/ 目录",
    "swanlab": ("SwanLab 的运行记录（swanlog/run-<时间>-<id>/run-<id>.swanlab，SwanLab 0.8 及以后），"
                "或存放多个运行记录的 swanlog/ 目录"),
    "mlflow": "MLflow 的记录库：mlruns/ 目录或 SQLite 文件 mlflow.db",
    "clearml": ("ClearML 的离线会话（offline-<id>/ 或它的 offline-<id>.zip 压缩包），"
                "或缓存里存放多个会话的 offline/ 目录"),
    "trackio": "Trackio 的项目数据库（<TRACKIO_DIR>/<project>.db），或存放多个项目数据库的目录",
    "aim": "Aim 的记录库（含 .aim/ 的目录，或 .aim/ 本身），每个运行通过 aim 扩展读取",
    "tensorboard": "TensorBoard 事件文件（events.out.tfevents.*），或存放多次运行的事件文件的目录",
    "notebook": "Jupyter 笔记本（.ipynb），其中保存的输出里有训练日志或训练表格",
    "trl-state": "HF Trainer / TRL 的 trainer_state.json（log_history），或存放各个 checkpoint 的 output_dir",
    "verl-jsonl": "veRL 的文件日志：每行一个 {\"step\": N, \"data\": {...}} 对象",
    "jsonl": "每行一条带步数字段的指标记录（JSONL）：自己写的日志，或 W&B 的 wandb-history.jsonl",
    "parquet": "Parquet 格式的指标表，每个记录步一行",
    "csv": "带步数列的 CSV 指标表：笔记本里的训练表格，或从 W&B 图表导出的数据",
    "verl-console": "veRL 的控制台日志：捕获的标准输出里 step:N - key:value 形式的行",
    "openrlhf-console": "OpenRLHF 的控制台日志：PPO 训练器在每个全局步打印的字典",
    "openrlhf-trainer-console": ("OpenRLHF 的 DPO / RM / SFT / KTO / PRM 训练器的控制台输出："
                                 "训练和评估各步的 tqdm 进度条"),
    "trl-console": "TRL / HF Trainer 的控制台输出：每个记录步打印的日志字典",
    "deepspeed-chat-console": "DeepSpeed-Chat 第三阶段（PPO）的控制台日志："
                              "epoch: N|step: N|ppo_ep: N|act_loss: ... 形式的行",
    "minimind-console": "MiniMind 强化学习训练脚本的日志：Epoch:[e/E](s/S), Reward: ..., KL_ref: ... 形式的行",
    "posttraining-llm-small-console": "post-training-llm-small 的 GRPO 脚本日志：grpo_loss is X and kl is Y 形式的行",
}
_TAIL = {"en": "rlvitals finds the format itself; --format NAME forces one.\n",
         "zh": "rlvitals 会自动识别格式；用 --format NAME 可以指定。\n"}


def render_formats(described: Iterable[tuple[str, str]], lang: str = "en") -> str:
    """One line per ``(format, its English description)``, the name padded to the longest; in Chinese
    the description of :data:`FORMATS_ZH` (the English one for a format it lacks).

    Example:
        >>> print(render_formats([("csv", "a CSV table"), ("jsonl", "JSON lines")], "zh"), end="")
        csv    带步数列的 CSV 指标表：笔记本里的训练表格，或从 W&B 图表导出的数据
        jsonl  每行一条带步数字段的指标记录（JSONL）：自己写的日志，或 W&B 的 wandb-history.jsonl
        rlvitals 会自动识别格式；用 --format NAME 可以指定。
    """
    rows = [(fmt, FORMATS_ZH.get(fmt, what) if lang == "zh" else what) for fmt, what in described]
    width = max((cell_len(fmt) for fmt, _ in rows), default=0)
    return "".join(f"{fmt:<{width}}  {what}\n" for fmt, what in rows) + _TAIL[lang]
