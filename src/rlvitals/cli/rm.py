"""``rlvitals rm-compare``: two reward models' scores on one rollout dump, and how much they disagree by step
(docs/reading-rules.md#rm-compare: a newer reward model contaminated by the policy's outputs grades itself); and
``diagnose RM_RUN --downstream POLICY_RUN``'s reading of the policy run (docs/reading-rules.md#rm-downstream).

The parser imports this module for the options, so it imports the readers only when the command runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..errors import RlvitalsError
from ..words import Words
from ._common import EXIT_OK, EXIT_USAGE, dump, error_line
from ._options import Commands, add_lang

if TYPE_CHECKING:
    from ..run.run import Run

__all__ = ["COMMANDS", "EXAMPLES", "add_rm_compare", "downstream_run"]

EXAMPLES = ("rlvitals rm-compare rollout_data_dir/ --scores score,rm_new",
            "rlvitals rm-compare samples.parquet --scores rm_v1,rm_v2 --json",
            "rlvitals rm-compare rollout_data_dir/ --scores score --base-url http://localhost:8000 --model my-rm-v2",
            "rlvitals rm-compare rollout_data_dir/ --scores score --local ./rm-v2-checkpoint",
            "rlvitals rm-compare rollout_data_dir/ --scores rm_old,rm_new --lang zh")


def add_rm_compare(sub: Commands) -> None:
    """The ``rm-compare`` subcommand's options."""
    cmp = sub.add("rm-compare", help="two reward models' scores on the same rollouts: do they disagree? "
                                     "(an RM contaminated by the policy)")
    cmp.add_argument("rollouts", metavar="DUMP", help="a rollout dump (file or folder) holding both scores")
    cmp.add_argument("--scores", required=True, metavar="A,B",
                     help="the two score columns, the older (reference) reward model's first, e.g. score,rm_new; "
                          "with --base-url or --local, the older one's column only (that model scores the other)")
    cmp.add_argument("--base-url", default=None, metavar="URL",
                     help="the root of a server scoring with the newer reward model on vLLM's pooling route "
                          "(vllm serve MODEL --runner pooling), e.g. http://host:8000")
    cmp.add_argument("--model", default=None, metavar="NAME",
                     help="the reward model the server serves (with --base-url)")
    cmp.add_argument("--local", default=None, metavar="PATH",
                     help="a reward-model folder (transformers, one label: as TRL's RewardTrainer or OpenRLHF save "
                          "it) scoring in this process instead of a server")
    cmp.add_argument("--timeout", type=float, metavar="SECONDS", default=120.0,
                     help="seconds per scoring request (default: 120)")
    cmp.add_argument("--retries", type=int, metavar="N", default=3,
                     help="retries of a failed scoring request, with backoff (default: 3)")
    cmp.add_argument("--json", action="store_true", help="print one JSON object with every figure")
    add_lang(cmp, help="language of the table and the verdict")


def _columns(given: str) -> tuple[str, str]:
    names = [c.strip() for c in given.split(",")]
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        raise RlvitalsError(Words(f"--scores {given!r}: expected two different columns separated by a comma, "
                                  "the older reward model's first (--scores score,rm_new), or one column with "
                                  "--base-url URL --model NAME scoring the other",
                                  f"--scores {given!r}：应为用逗号分隔的两个不同的列，旧版奖励模型的在前"
                                  "（--scores score,rm_new），或者一列加上 --base-url URL --model NAME 给另一方打分"))
    return names[0], names[1]


def _served(args: argparse.Namespace) -> str:
    """The one column ``--scores`` names beside a served (or local) reward model."""
    column = str(args.scores).strip()
    if args.local is not None and (args.base_url is not None or args.model is not None):
        raise RlvitalsError(Words("--local and --base-url/--model both given: the newer reward model is either in "
                                  "this process (--local PATH) or served (--base-url URL --model NAME)",
                                  "同时给出了 --local 和 --base-url/--model：新版奖励模型要么在本进程中运行"
                                  "（--local PATH），要么由服务器提供（--base-url URL --model NAME）"))
    if args.local is None and (args.base_url is None) != (args.model is None) or not column or "," in column:
        raise RlvitalsError(Words(
            f"--scores {args.scores!r} --base-url {args.base_url} --model {args.model}: a served reward model needs "
            "both --base-url URL and --model NAME, and --scores names the one column it is compared with "
            "(--scores score)",
            f"--scores {args.scores!r} --base-url {args.base_url} --model {args.model}：服务中的奖励模型需要同时给出 "
            "--base-url URL 和 --model NAME，且 --scores 只写与之对比的那一列（--scores score）"))
    if args.timeout <= 0 or args.retries < 0:
        raise RlvitalsError(Words(f"--timeout {args.timeout} --retries {args.retries}: expected a timeout above 0 "
                                  "and 0 or more retries",
                                  f"--timeout {args.timeout} --retries {args.retries}：超时必须大于 0，"
                                  "重试次数不能为负"))
    return column


def _rm_compare(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..probe.rm_compare import compare_columns, compare_scored
    from ..render.rm_compare import render_rm_compare

    try:
        if args.base_url is None and args.model is None and args.local is None:
            a, b = _columns(args.scores)
            result = compare_columns(args.rollouts, a, b).to_json()
        else:
            from ..probe.rm_scorer import LocalScorer, PoolingScorer

            column = _served(args)
            scorer: LocalScorer | PoolingScorer = (
                LocalScorer(Path(args.local)) if args.local is not None else
                PoolingScorer(args.base_url, args.model, timeout=args.timeout, retries=args.retries))
            name = Path(args.local).name if args.local is not None else str(args.model)
            result = compare_scored(args.rollouts, column, scorer, name).to_json()
            result["scorer"] = {"url": scorer.url, "model": name, "requests": scorer.requests}
    except RlvitalsError as exc:
        err.write(error_line(exc, args.lang))
        return EXIT_USAGE
    out.write(dump(result) + "\n" if args.json else render_rm_compare(result, args.lang))
    return EXIT_OK


#: subcommand → handler
COMMANDS = {"rm-compare": _rm_compare}


def downstream_run(args: argparse.Namespace, runs: list[Run], err: IO[str]) -> tuple[Run | None, bool]:
    """``diagnose --downstream POLICY_RUN``: the policy run, read, and whether the command must stop (the policy
    run could not be read, it is not a policy run, or no RUN is a reward model's training: each said on ``err``)."""
    path = getattr(args, "downstream", None)
    if path is None:
        return None, False
    from ._common import load_all, said_line

    lang = args.lang
    loaded, status = load_all([path], None, err, progress=not args.json, lang=lang)
    if status != EXIT_OK or not loaded:
        return None, True
    policy = loaded[0]
    if policy.family != "rl":
        err.write(said_line(Words(
            f"--downstream {path}: a {policy.algorithm_label} run, not a policy trained by reinforcement learning; "
            "give the PPO/GRPO run the reward model judged",
            f"--downstream {path}：这是{policy.algorithm_label}，不是强化学习训练的策略；请给出这个奖励模型所评判的 "
            "PPO/GRPO 训练"), lang))
        return None, True
    if runs and not any(r.family == "reward-model" for r in runs):
        shown = ", ".join(f"{r.path} ({r.algorithm_label})" for r in runs)
        err.write(said_line(Words(
            f"--downstream reads a reward model's training against the policy run it judged, but no RUN is a "
            f"reward-model training: {shown}; give the reward model's log as RUN",
            f"--downstream 用于把奖励模型的训练和它所评判的策略训练对照，但给出的 RUN 都不是奖励模型训练：{shown}；"
            "请把奖励模型的日志作为 RUN"), lang))
        return None, True
    return policy, False
