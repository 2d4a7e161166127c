"""What ``rlvitals probe`` prints: the faithfulness score, each intervention's answer-change rate with its
interval and what a faithful chain would do, the bias-following rates, step verification and self-consistency,
in English or Chinese."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

__all__ = ["render_probe"]

_NAMES = {
    "early_answering": ("early answering (reasoning cut short)", "提前作答（截断推理）"),
    "add_mistake": ("a mistake added to one step", "在一步中加入错误"),
    "paraphrase": ("reasoning paraphrased", "改写推理"),
    "filler": ("reasoning replaced by filler", "用填充内容替换推理"),
    "biased": ("a wrong answer suggested in the prompt", "在提示中暗示错误答案"),
}
_EXPECTED = {"change": ("a faithful chain changes its answer", "忠实的推理会改变答案"),
             "same": ("a faithful chain keeps its answer", "忠实的推理会保持答案"),
             "no follow": ("a faithful chain does not follow it silently", "忠实的推理不会默默跟随暗示")}
_W = {
    "en": {"model": "model", "probed": "rollouts probed", "faith": "faithfulness", "none": "not measured",
           "change": "answers changed", "follow": "followed the suggestion", "silent": "followed it without saying so",
           "acc": "accuracy without / with the suggestion", "steps": "intermediate steps checked",
           "right": "right", "wrong_rollouts": "rollouts with a wrong step",
           "through": "correct answers reached through a wrong step", "sc": "self-consistency (maj@{n} − pass@1)",
           "skipped": "not probed: {a} without prompt or response, {b} whose full reasoning gave the model no answer",
           "requests": "requests sent", "cache": "answered from the cache", "written": "per-step results written to",
           "curve": "answers unchanged by the share of reasoning shown", "higher": "(0–1, higher = the answers depend "
           "more on the reasoning)", "sure": "probability of the forced answer by the share shown"},
    "zh": {"model": "模型", "probed": "探测的 rollout", "faith": "忠实度", "none": "未测量",
           "change": "答案改变", "follow": "跟随了暗示", "silent": "跟随暗示却未提及",
           "acc": "无暗示 / 有暗示时的准确率", "steps": "检查的中间步骤", "right": "正确",
           "wrong_rollouts": "含错误步骤的 rollout", "through": "经由错误步骤得到的正确答案",
           "sc": "自洽性（maj@{n} − pass@1）",
           "skipped": "未探测：{a} 条缺少 prompt 或 response，{b} 条在完整推理下模型未给出答案",
           "requests": "发送的请求", "cache": "由缓存回答", "written": "每步结果写入",
           "curve": "按所示推理比例计的答案不变比例", "higher": "（0–1，越高说明答案越依赖推理）",
           "sure": "按所示推理比例计的强制答案概率"},
}


def _pct(x: object) -> str:
    return "—" if not isinstance(x, float | int) else f"{100 * x:.0f}%"


def _ci(v: object) -> str:
    if not isinstance(v, Sequence) or len(v) != 2:
        return ""
    lo, hi = cast(Sequence[float], v)
    return f" [{100 * lo:.0f}–{100 * hi:.0f}%]"


def _said(name: str, value: str, lang: str) -> str:
    return f"{name}{'：' if lang == 'zh' else ': '}{value}"


def _aside(text: str, lang: str) -> str:
    return f"（{text}）" if lang == "zh" else f"({text})"


def _probe_lines(p: Mapping[str, object], lang: str, w: Mapping[str, str]) -> list[str]:
    zh = lang == "zh"
    name = _NAMES.get(str(p["probe"]), (str(p["probe"]),) * 2)[zh]
    expected = _EXPECTED.get(str(p.get("expected")), ("", ""))[zh]
    if p["probe"] == "biased":
        lines = [f"  {name}  n={p['n']}", f"    {w['follow']} {_pct(p.get('bias_follow_rate'))}{_ci(p.get('interval'))}"
                 f" · {w['silent']} {_pct(p.get('unfaithful_rate'))}{_ci(p.get('unfaithful_interval'))}"]
        if "acc_unbiased" in p:
            lines.append(f"    {w['acc']} {_pct(p['acc_unbiased'])} / {_pct(p['acc_biased'])}")
        return lines + [f"    {_aside(expected, lang)}"]
    lines = [f"  {name}  n={p['n']}",
             f"    {w['change']} {_pct(p.get('answer_change_rate'))}{_ci(p.get('interval'))}  {_aside(expected, lang)}"]
    if p["probe"] == "early_answering":
        curve = cast(Mapping[str, float], p.get("curve", {}))
        lines.append("    " + _said(w["curve"], "  ".join(f"{float(k):.0%}→{_pct(v)}" for k, v in curve.items()), lang))
        lines.append(f"    AOC {p.get('aoc', 0):.2f}{'' if not p.get('aoc_interval') else _ci(p['aoc_interval'])}")
        sure = cast(Mapping[str, float | None], p.get("confidence") or {})
        if sure:  # where the backend gave log-probabilities
            lines.append("    " + _said(w["sure"], "  ".join(f"{float(k):.0%}→{_pct(v)}" for k, v in sure.items()),
                                        lang))
    return lines


def render_probe(result: Mapping[str, object], lang: str = "en", written: str | None = None) -> str:
    """The text ``rlvitals probe`` prints for ``result`` (:func:`rlvitals.probe.run_probe`)."""
    w = _W.get(lang, _W["en"])
    faith = result.get("faithfulness")
    band = result.get("faithfulness_interval")
    shown = f" [{band[0]:.2f}–{band[1]:.2f}]" if isinstance(band, Sequence) and len(band) == 2 else ""
    lines = [_said(w["model"], str(result["model"]), lang), _said(w["probed"], str(result["rollouts"]), lang),
             _said(w["faith"], f"{faith:.2f}{shown} {w['higher']}" if isinstance(faith, float) else w["none"], lang)]
    for p in cast(Sequence[Mapping[str, object]], result.get("probes", [])):
        lines.extend(_probe_lines(p, lang, w))
    sv = cast(Mapping[str, object], result.get("step_verification") or {})
    if sv.get("checked"):
        lines.append(_said(w["steps"], f"{sv['checked']} · {w['right']} {_pct(sv.get('right'))} · "
                           f"{w['wrong_rollouts']} {_pct(sv.get('wrong_step_rate'))} · {w['through']} "
                           f"{_pct(sv.get('correct_through_wrong_step'))}", lang))
    sc = result.get("self_consistency")
    if isinstance(sc, Mapping):
        lines.append(_said(w["sc"].format(n=sc["samples"]), f"{sc['gap']:+.2f}"
                           + ("" if not sc.get("interval") else " [{:+.2f}, {:+.2f}]".format(*sc["interval"])), lang))
    skipped = cast(Mapping[str, int], result.get("not_probed", {}))
    if any(skipped.values()):
        lines.append(w["skipped"].format(a=skipped.get("no_prompt_or_response", 0),
                                         b=skipped.get("no_reference_answer", 0)))
    cache = result.get("cache")
    lines.append(_said(w["requests"], str(result.get("requests", 0)), lang)
                 + (" · " + _said(w["cache"], str(cache["hits"]), lang) if isinstance(cache, Mapping) else ""))
    if written:
        lines.append(_said(w["written"], written, lang))
    return "\n".join(lines) + "\n"
