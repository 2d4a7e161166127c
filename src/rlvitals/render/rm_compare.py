"""What ``rlvitals rm-compare`` prints: two reward models' disagreement on one rollout dump, step by step (rank
correlation, pairs ordered differently, mean gap), and the verdict line, in English or Chinese
(docs/reading-rules.md#rm-compare)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["render_rm_compare"]

_W = {
    "en": {"head": "rm-compare {source}: A = {a}, B = {b}; {n} step(s)",
           "cols": ("step", "rollouts", "rank corr ρ", "pairs ordered differently", "mean gap B − A"),
           "ok": "OK — the two reward models agree on the latest steps ({steps}): median ρ {rho} (≥ {agree}), {disc} "
                 "of pairs ordered differently, mean gap {gap}.",
           "warn": "WARN — the two reward models disagree on the latest steps ({steps}): median ρ {rho} "
                   "(below {agree}), {disc} of pairs ordered differently, mean gap {gap}. Check which one the "
                   "policy is exploiting: the newer reward model may be taking in the policy's own outputs.",
           "fail": "FAIL — the two reward models rank the policy's latest rollouts ({steps}) differently: "
                   "median ρ {rho} (below {contaminated}), {disc} of pairs ordered differently, mean gap {gap}. "
                   "The newer reward model was contaminated by the policy's outputs (it grades itself): retrain "
                   "it without them, or keep training against the older one.",
           "skipped": "CANNOT JUDGE — no step has {min} rollouts scored by both with scores that vary.",
           "untold": "(steps with fewer than {min} rollouts scored by both, or a constant score, are not judged)"},
    "zh": {"head": "rm-compare {source}：A = {a}，B = {b}；共 {n} 步",
           "cols": ("步", "rollout 数", "秩相关 ρ", "排序相反的样本对", "平均分差 B − A"),
           "ok": "正常——两个奖励模型在最近的步（{steps}）上一致：ρ 中位数 {rho}（≥ {agree}），{disc} 的样本对排序相反，"
                 "平均分差 {gap}。",
           "warn": "警告——两个奖励模型在最近的步（{steps}）上有分歧：ρ 中位数 {rho}（低于 {agree}），"
                   "{disc} 的样本对排序相反，平均分差 {gap}。查一下策略在利用哪一个："
                   "新版 RM 可能混入了策略自己的输出。",
           "fail": "失败——两个奖励模型对策略最近的 rollout（{steps}）排序不同：ρ 中位数 {rho}（低于 {contaminated}），"
                   "{disc} 的样本对排序相反，平均分差 {gap}。新版 RM 被当前策略的输出“污染”了（自己给自己打分）："
                   "去掉这些输出重新训练它，或继续用旧版 RM 训练。",
           "skipped": "无法判断——没有哪一步有 {min} 条两个模型都打了分且分数有变化的 rollout。",
           "untold": "（两个模型都打分的 rollout 少于 {min} 条、或分数不变的步不做判断）"},
}


def _num(x: object, fmt: str = ".3g") -> str:
    return "—" if not isinstance(x, int | float) else format(x, fmt)


def _pct(x: object) -> str:
    return "—" if not isinstance(x, int | float) else f"{100 * x:.0f}%"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def render_rm_compare(result: Mapping[str, Any], lang: str = "en") -> str:
    """The text of one comparison (:meth:`rlvitals.probe.rm_compare.Comparison.to_json`).

    >>> from rlvitals.probe.rm_compare import compare_table
    >>> import polars as pl
    >>> t = pl.DataFrame({"step": [3] * 5, "old": [1.0, 2, 3, 4, 5], "new": [5.0, 4, 3, 2, 1]})
    >>> print(render_rm_compare(compare_table(t, "old", "new", "dump/").to_json()).splitlines()[-1][:60])
    FAIL — the two reward models rank the policy's latest rollou
    """
    w = _W["zh" if lang == "zh" else "en"]
    steps = result["steps"]
    th = result["thresholds"]
    lines = [str(w["head"]).format(source=result["source"], a=result["a"], b=result["b"], n=len(steps)), ""]
    rows = [list(w["cols"])] + [[str(s["step"]), str(s["n"]), _num(s["rho"], ".2f"), _pct(s["discordant"]),
                                 _num(s["gap"], "+.3g")] for s in steps]
    lines += ["  " + line for line in _table(rows)]
    if any(s["rho"] is None for s in steps):
        lines.append("  " + str(w["untold"]).format(min=th["min_rollouts"]))
    latest = ", ".join(str(s) for s in result["latest_steps"])
    lines += ["", str(w[result["verdict"]]).format(steps=latest, rho=_num(result["rho"], ".2f"),
                                                   disc=_pct(result["discordant"]), gap=_num(result["gap"], "+.3g"),
                                                   agree=th["agree"], contaminated=th["contaminated"],
                                                   min=th["min_rollouts"])]
    return "\n".join(lines) + "\n"
