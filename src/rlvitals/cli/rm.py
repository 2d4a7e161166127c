"""``rlvitals rm-compare``: two reward models' scores on one rollout dump, and how much they disagree by step
(docs/reading-rules.md#rm-compare: a newer reward model contaminated by the policy's outputs grades itself); and
``diagnose RM_RUN --downstream POLICY_RUN``'s reading of the policy run (docs/reading-rules.md#rm-downstream).

The parser imports this module for the options, so it imports the readers only when the command runs."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..errors import RlvitalsError
from ..words import Words
from ._common import EXIT_OK, EXIT_USAGE, dump, error_line
from ._options import Commands, add_lang

if TYPE_CHECKING:
    from ..probe.rm_scorer import LocalScorer, PoolingScorer
    from ..run.run import Run

__all__ = ["COMMANDS", "EXAMPLES", "add_rm_compare", "downstream_run"]

EXAMPLES = ("rlvitals rm-compare rollout_data_dir/ --scores score,rm_new",
            "rlvitals rm-compare samples.parquet --scores rm_v1,rm_v2 --json",
            "rlvitals rm-compare rollout_data_dir/ --scores score --base-url http://localhost:8000 --model my-rm-v2",
            "rlvitals rm-compare rollout_data_dir/ --scores score --local ./rm-v2-checkpoint",
            "rlvitals rm-compare rollout_data_dir/ --ref-local ./rm-v1 --local ./rm-v2",
            "rlvitals rm-compare rollout_data_dir/ --ref-base-url http://h1:8000 --ref-model rm-v1 "
            "--base-url http://h2:8000 --model rm-v2",
            "rlvitals rm-compare rollout_data_dir/ --scores rm_old,rm_new --lang zh")


def add_rm_compare(sub: Commands) -> None:
    """The ``rm-compare`` subcommand's options."""
    cmp = sub.add("rm-compare", help="two reward models' scores on the same rollouts: do they disagree? "
                                     "(an RM contaminated by the policy)")
    cmp.add_argument("rollouts", metavar="DUMP", help="a rollout dump (file or folder) holding both scores")
    cmp.add_argument("--scores", default=None, metavar="A,B",
                     help="the score columns of the dump, the older (reference) reward model's first, e.g. "
                          "score,rm_new; one column where the other model scores here (--base-url/--local for the "
                          "newer one, --ref-base-url/--ref-local for the older one), none where both do")
    for side, which in (("", "newer"), ("ref-", "older (reference)")):
        cmp.add_argument(f"--{side}base-url", default=None, metavar="URL",
                         help=f"the root of a server scoring with the {which} reward model on vLLM's pooling route "
                              "(vllm serve MODEL --runner pooling), e.g. http://host:8000")
        cmp.add_argument(f"--{side}model", default=None, metavar="NAME",
                         help=f"the {which} reward model the server serves (with --{side}base-url)")
        cmp.add_argument(f"--{side}local", default=None, metavar="PATH",
                         help=f"the {which} reward model's folder (transformers, one label: as TRL's RewardTrainer "
                              "or OpenRLHF save it) scoring in this process instead of a server")
    cmp.add_argument("--timeout", type=float, metavar="SECONDS", default=120.0,
                     help="seconds per scoring request (default: 120)")
    cmp.add_argument("--retries", type=int, metavar="N", default=3,
                     help="retries of a failed scoring request, with backoff (default: 3)")
    cmp.add_argument("--json", action="store_true", help="print one JSON object with every figure")
    add_lang(cmp, help="language of the table and the verdict")


@dataclass(frozen=True)
class _Side:
    """One reward model of the comparison: a served or local scorer (its flags' prefix, ``""`` or ``"ref-"``), or
    None where its scores are a column of the dump."""

    prefix: str
    url: str | None
    model: str | None
    local: str | None

    @property
    def scores(self) -> bool:
        return self.url is not None or self.model is not None or self.local is not None

    def checked(self) -> _Side:
        p = f"--{self.prefix}"
        if self.local is not None and (self.url is not None or self.model is not None):
            raise RlvitalsError(Words(
                f"{p}local and {p}base-url/{p}model both given: a reward model is either in this process "
                f"({p}local PATH) or served ({p}base-url URL {p}model NAME)",
                f"同时给出了 {p}local 和 {p}base-url/{p}model：奖励模型要么在本进程中运行（{p}local PATH），"
                f"要么由服务器提供（{p}base-url URL {p}model NAME）"))
        if self.local is None and (self.url is None) != (self.model is None):
            raise RlvitalsError(Words(
                f"{p}base-url {self.url} {p}model {self.model}: a served reward model needs both {p}base-url URL "
                f"and {p}model NAME",
                f"{p}base-url {self.url} {p}model {self.model}：服务中的奖励模型需要同时给出 {p}base-url URL 和 "
                f"{p}model NAME"))
        return self

    @property
    def name(self) -> str:
        return Path(self.local).name if self.local is not None else str(self.model)


def _wanted(given: str | None, a: _Side, b: _Side) -> list[str]:
    """The columns ``--scores`` names, as many as the sides no model scores: a miscount is said with the form
    that fits."""
    names = [c.strip() for c in given.split(",")] if given is not None else []
    need = (not a.scores) + (not b.scores)
    if len(names) == need and all(names) and len(set(names)) == len(names):
        return names
    shown = "(not given)" if given is None else repr(given)
    if need == 2:
        en, zh = ("expected two different columns separated by a comma, the older reward model's first "
                  "(--scores score,rm_new), or one column with --base-url URL --model NAME (or --local PATH) "
                  "scoring the other",
                  "应为用逗号分隔的两个不同的列，旧版奖励模型的在前（--scores score,rm_new），"
                  "或者一列加上 --base-url URL --model NAME（或 --local PATH）给另一方打分")
    elif need == 0:
        en, zh = ("both reward models score here (--ref-base-url/--ref-local and --base-url/--local), so no column "
                  "of the dump is compared: leave --scores out",
                  "两个奖励模型都在这里打分（--ref-base-url/--ref-local 和 --base-url/--local），不比较 dump 中的列："
                  "请去掉 --scores")
    elif b.scores:
        en, zh = ("with the newer reward model scoring here, --scores names the one column it is compared with, the "
                  "older reward model's (--scores score)",
                  "新版奖励模型在这里打分时，--scores 只写与之对比的那一列，即旧版奖励模型的列（--scores score）")
    else:
        en, zh = ("with the older reward model scoring here (--ref-…), --scores names the one column it is compared "
                  "with, the newer reward model's (--scores rm_new)",
                  "旧版奖励模型在这里打分时（--ref-…），--scores 只写与之对比的那一列，即新版奖励模型的列"
                  "（--scores rm_new）")
    raise RlvitalsError(Words(f"--scores {shown}: {en}", f"--scores {shown}：{zh}"))


def _scorer(side: _Side, args: argparse.Namespace) -> LocalScorer | PoolingScorer:
    from ..probe.rm_scorer import LocalScorer, PoolingScorer

    if side.local is not None:
        return LocalScorer(Path(side.local))
    return PoolingScorer(str(side.url), str(side.model), timeout=args.timeout, retries=args.retries)


def _rm_compare(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..probe.rm_compare import compare_columns, compare_scored
    from ..render.rm_compare import render_rm_compare

    try:
        a = _Side("ref-", args.ref_base_url, args.ref_model, args.ref_local).checked()
        b = _Side("", args.base_url, args.model, args.local).checked()
        columns = _wanted(args.scores, a, b)
        if not a.scores and not b.scores:
            result = compare_columns(args.rollouts, columns[0], columns[1]).to_json()
        else:
            if args.timeout <= 0 or args.retries < 0:
                raise RlvitalsError(Words(f"--timeout {args.timeout} --retries {args.retries}: expected a timeout "
                                          "above 0 and 0 or more retries",
                                          f"--timeout {args.timeout} --retries {args.retries}：超时必须大于 0，"
                                          "重试次数不能为负"))
            rest = iter(columns)
            name_a, name_b = (a.name if a.scores else next(rest)), (b.name if b.scores else next(rest))
            if a.scores and b.scores and name_a == name_b:  # two folders or servers that share a name
                name_a, name_b = f"{name_a} (ref)", f"{name_b} (new)"
            scorers = {name: _scorer(side, args) for name, side in ((name_a, a), (name_b, b)) if side.scores}
            result = compare_scored(args.rollouts, name_a, name_b, scorers).to_json()
            for key, name in (("ref_scorer", name_a), ("scorer", name_b)):
                if name in scorers:
                    result[key] = {"url": scorers[name].url, "model": name, "requests": scorers[name].requests}
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
