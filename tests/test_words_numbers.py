"""Words never contradict numbers (issue 34, item 4): every check runs over every corpus run and every
scenario of the scenario suite, and what its findings say is held against the numbers they read.

1. A warn/fail message never says the change it reports is within noise.
2. "spike", "jump", "surge" (突刺, 跳升, 飙升) in a warn/fail message only when the finding's own evidence
   ratio reaches the check's own threshold, and a surge quoted as ``a → b`` goes up.
3. "at its top", "solved" (已经做对, 处于顶部) only when the reward is in the top tenth of its range (the
   logged batch min/max, else the run's own 2nd-98th percentile) and the responses are not truncated.
4. A check is never both a finding (note/warn/fail) and passed (ok) for the same metrics.
5. A layer is never ``ok`` when none of its checks judged anything the run logged, and the report never says
   "This run logged no metric of this layer." under an OK (it points to the curves the checks read).
6. A number quoted as a series' level ("from X to Y", "X → Y", "level X", "median X", "at X") is a value
   the series took, to the precision printed.
7. Advice never asks for what the evidence rules out (:data:`ADVICE`).

Each property is first shown to fail on a case built to violate it. The real inputs (85 corpus runs and 132
scenario runs, each diagnosed and its report rendered once) take about 40 s: marked slow.
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rlvitals
from rlvitals.catalog import load_catalog
from rlvitals.checks import FINDING_STATUSES, VERDICT_STATUSES, load_checks
from rlvitals.diagnosis import Diagnosis, Finding, assemble
from rlvitals.report.html import render_html
from rlvitals.report.model import build_page
from rlvitals.run.run import Run
from rlvitals.synthetic.pathologies import PATHOLOGIES, Spec
from rlvitals.synthetic.scenarios import grid, run_for, run_from_series

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import corpus_eval  # noqa: E402

REWARDS = ("critic/score/mean", "critic/rewards/mean")
TRUNCATION = ("response_length/clip_ratio", "response_length_non_aborted/clip_ratio", "rollout/truncation_share",
              "completions/clipped_ratio")
NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[-+]?\d+)?"


@functools.lru_cache(maxsize=1)
def _params() -> dict[str, Mapping[str, Any]]:
    return {c.id: c.params for c in load_checks()}


def _alarms(d: Diagnosis) -> list[Finding]:
    return [f for f in d.findings if f.status in VERDICT_STATUSES]


def _values(run: Run, key: str) -> np.ndarray | None:
    """Every finite value ``key`` took: a training series, else a validation column (of any source)."""
    if key in run.frame.columns:
        v = np.asarray(run.series(key, finite=True)[1], dtype=float)
        return v if len(v) else None
    found = [frame[key].drop_nulls().to_numpy().astype(float) for frame in run.validation.values()
             if key in frame.columns and key != "step"]
    v = np.concatenate(found) if found else np.array([])
    v = v[np.isfinite(v)]
    return v if len(v) else None


def _columns(run: Run) -> set[str]:
    return {c for frame in run.validation.values() for c in frame.columns if c != "step"}


def _steps_values(run: Run, key: str) -> tuple[np.ndarray, np.ndarray] | None:
    if key not in run.frame.columns:
        return None
    steps, values = run.series(key, finite=True)
    return (np.asarray(steps), np.asarray(values, dtype=float)) if len(values) else None


# --- 1. within noise ------------------------------------------------------------------------------------------

_NOISE_RATIO = [re.compile(rf"({NUM})× (?:its |the )?(?:own )?(?:step )?noise"),
                re.compile(rf"噪声[^，。；（）]*?的 ({NUM}) 倍"), re.compile(rf"({NUM})\+? (?:robust sd|个稳健标准差)")]
_WITHIN = [re.compile(r"within (?:its |the )?(?:own )?(?:step )?noise"),
           re.compile(r"(?:在|于)[^，。；]*噪声[^，。；]*(?:范围)?之?内")]
#: a change quoted beside the noise it is read against: "from X to Y … noise of N" / "X → Y (±N)"
_CHANGE = re.compile(rf"(?:from ({NUM}) to ({NUM})|({NUM}) → ({NUM})|从 ({NUM}) \S{{0,3}}到 ({NUM}))")
_NOISE = re.compile(rf"noise (?:of |\(±)({NUM})|\(±({NUM})\)|噪声 ?(?:（±)?({NUM})")
#: a finding about a curve that did not move says its change is within noise: that is its evidence
_NO_CHANGE = re.compile(r"did not (?:improve|rise|move|change)|never rose|没有提升|没有上升|从未超出|不动")


def _changes_within_noise(text: str) -> Iterable[str]:
    """Each change ``text`` quotes that is no larger than the noise it quotes in the same sentence."""
    for sentence in re.split(r"(?<=[.。;；])\s*", text):
        noise = [float(g) for m in _NOISE.finditer(sentence) for g in m.groups() if g is not None]
        for m in _CHANGE.finditer(sentence) if noise else ():
            a, b = (float(g) for g in m.groups() if g is not None)
            if abs(b - a) <= min(noise):
                yield f"{m.group(0)!r} is within the noise of {min(noise):g} it quotes"


def within_noise(d: Diagnosis) -> list[str]:
    out = []
    for f in _alarms(d):
        for lang, text in f.message.items():
            for pat in _NOISE_RATIO:
                out += [f"{f.check} ({lang}): a {f.status} quotes {m.group(0)!r}, at most its noise: {text}"
                        for m in pat.finditer(text) if float(m.group(1)) <= 1]
            if _NO_CHANGE.search(text):
                continue
            if any(p.search(text) for p in _WITHIN):
                out.append(f"{f.check} ({lang}): a {f.status} says its change is within noise: {text}")
            out += [f"{f.check} ({lang}): a {f.status}: {why}: {text}" for why in _changes_within_noise(text)]
    return out


# --- 2. spike words -------------------------------------------------------------------------------------------

_SPIKE = re.compile(r"\b(?:spik\w*|jump\w*|surg\w*)|突刺|跳升|飙升", re.I)
_NOT_SPIKE = re.compile(r"(?:not|never|no|without)\s+(?:\w+\s+){0,3}(?:spik|jump|surg)\w*|没有[^，。；]{0,6}(?:突刺|跳升|飙升)",
                        re.I)
_SURGE_ARROW = re.compile(rf"(?:spik|jump|surg)\w*[^.;:]{{0,12}}?\(({NUM}) → ({NUM})\)")


def _ratio(e: Mapping[str, Any], key: str) -> float | None:
    v = e.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _over(e: Mapping[str, Any], top: str, bottom: str) -> float | None:
    a, b = _ratio(e, top), _ratio(e, bottom)
    return None if a is None or b is None else a / b if b > 0 else math.inf


def _lift(e: Mapping[str, Any]) -> float | None:
    """How many times its baseline the finding's peak (else its value) was."""
    return _over(e, "peak", "baseline") if "peak" in e else _over(e, "value", "baseline")


#: per check, the evidence ratio a spike is judged by and the parameter it must reach (the check's own rule)
SPIKE_RULES: dict[str, tuple[Callable[[Mapping[str, Any]], float | None], Callable[[Mapping[str, Any]], float]]] = {
    "grad_norm_spike": (_lift, lambda p: p["ratio"]),
    "kl_jump": (lambda e: _ratio(e, "ratio"), lambda p: p["ratio"]),
    "loss_jump": (lambda e: _ratio(e, "score"), lambda p: p["k"]),
    "turns_surge": (_lift, lambda p: p["ratio"]),
    "lr_schedule": (lambda e: _over(e, "value", "before"), lambda p: p["jump"]),
    "entropy_surge": (_lift, lambda p: 1 + p["rise"]),
}


def _generic_rule(e: Mapping[str, Any], p: Mapping[str, Any]) -> tuple[float, float] | None:
    for ekey, pkey in (("ratio", "ratio"), ("score", "k")):
        got = _ratio(e, ekey)
        if got is not None and pkey in p:
            return got, float(p[pkey])
    return None


def spike_words(d: Diagnosis) -> list[str]:
    out = []
    for f in _alarms(d):
        for lang, text in f.message.items():
            said = _SPIKE.findall(text)
            if not said or (len(said) == len(_NOT_SPIKE.findall(text))):
                continue
            for m in _SURGE_ARROW.finditer(text):
                if float(m.group(2)) <= float(m.group(1)):
                    out.append(f"{f.check} ({lang}): says {m.group(0)!r}, which does not go up: {text}")
            p = _params()[f.check]
            rule = SPIKE_RULES.get(f.check)
            pair = ((rule[0](f.evidence), float(rule[1](p))) if rule else _generic_rule(f.evidence, p))
            if pair and pair[0] is not None and math.isfinite(pair[0]) and pair[0] < pair[1]:
                out.append(f"{f.check} ({lang}): says {said[0]!r} with an evidence ratio of {pair[0]:.3g}, below "
                           f"its threshold {pair[1]:g}: {text}")
    return out


# --- 3. at the top --------------------------------------------------------------------------------------------

_TOP = re.compile(r"at its top|at the top|\bsolved\b|已经做对|处于顶部")
_NOT_TOP = re.compile(r"never solved|not solved|unsolved")


def _reward(run: Run, f: Finding) -> tuple[np.ndarray, np.ndarray, float, float] | None:
    """The reward the finding reads (its pass@k for a pass@k finding), with its range."""
    key = next((k for k in f.metrics if k.startswith("pass@")), None)
    if key is not None and (sv := _steps_values(run, key)) is not None:
        return sv[0], sv[1], 0.0, 1.0  # a pass rate's known range
    named = f.evidence.get("reward_metric")
    for key in ([named] if isinstance(named, str) else []) + list(REWARDS):
        sv = _steps_values(run, key)
        if sv is None:
            continue
        prefix = key.rsplit("/", 1)[0]
        lo, hi = _values(run, prefix + "/min"), _values(run, prefix + "/max")
        if lo is not None and hi is not None and np.median(hi) > np.median(lo):
            return sv[0], sv[1], float(np.median(lo)), float(np.median(hi))
        a, b = np.percentile(sv[1], [2, 98])
        return sv[0], sv[1], float(a), float(b)
    return None


#: a finding about the steps its metric was exactly 0 ("exactly 0 on 30 steps … the reward at its top there")
_ZERO_STEPS = re.compile(r"exactly 0 on|恰好为 0")


def _when(f: Finding, steps: np.ndarray, run: Run | None = None) -> np.ndarray:
    """The steps a finding speaks of: those its metric was exactly 0 when it says so, its points, its span,
    from its onset, else the last fifth."""
    zeros = _steps_values(run, f.metrics[0]) if run is not None and f.metrics else None
    if zeros is not None and _ZERO_STEPS.search(f.message["en"]) and (zeros[1] <= 0).any():
        return np.isin(steps, zeros[0][zeros[1] <= 0])
    if f.points:
        return np.isin(steps, np.asarray(f.points))
    if f.span is not None:
        return (steps >= f.span[0]) & (steps <= f.span[1])
    if f.onset_step is not None:
        return steps >= f.onset_step
    return steps >= steps[-max(1, len(steps) // 5)]


def _truncated(run: Run, after: int | None) -> float | None:
    for key in TRUNCATION:
        sv = _steps_values(run, key)
        if sv is not None:
            keep = sv[1][sv[0] >= (after if after is not None else sv[0][0])]
            return float(np.median(keep)) if len(keep) else None
    return None


def at_the_top(run: Run, d: Diagnosis) -> list[str]:
    out = []
    for f in d.findings:
        said = [(lang, text) for lang, text in f.message.items() if _TOP.search(_NOT_TOP.sub("", text))]
        if f.status == "skipped" or not said:
            continue
        found = _reward(run, f)
        if found is None:
            continue
        steps, values, lo, hi = found
        at = _when(f, steps, run)
        level = float(np.median(values[at] if at.any() else values))
        cut = _truncated(run, f.onset_step)
        for lang, text in said:
            if level < hi - 0.1 * (hi - lo):
                out.append(f"{f.check} ({lang}): says the reward is at its top, but it is {level:.3g} in a range "
                           f"{lo:.3g}–{hi:.3g}: {text}")
            if cut is not None and cut >= 0.1:
                out.append(f"{f.check} ({lang}): says the task is solved while {cut:.0%} of the responses are "
                           f"truncated: {text}")
    return out


# --- 4. a finding and passed ----------------------------------------------------------------------------------

def found_and_passed(d: Diagnosis) -> list[str]:
    """Compared per subject: a finding's first metric is what it judged, the rest what it read beside it (the
    training reward each validation source of val_reward_divergence is read against is no subject of its own)."""
    out = []
    passed = [f for f in d.findings if f.status == "ok"]
    for f in d.findings:
        if f.status not in FINDING_STATUSES:
            continue
        for g in passed:
            if g.check == f.check and g.metrics[:1] == f.metrics[:1]:
                out.append(f"{f.check}: a {f.status} on {f.metrics} ({f.message['en']}) and passed on {g.metrics} "
                           f"({g.message['en']})")
    return out


# --- 5. a layer judged on nothing -----------------------------------------------------------------------------

def _read(run: Run, f: Finding) -> bool:
    """Whether a finding judged something the run logged: a metric of its, or a validation column it names."""
    columns = _columns(run)
    return any(k in run.metrics or any(part.strip() in columns for part in k.split(" − ")) for k in f.metrics)


def _layer_logged(run: Run) -> set[str]:
    """The layers the run logged a metric of (the catalog's layer of each key, as the report draws them)."""
    catalog = load_catalog()
    found = set()
    for key in run.metrics:
        entry = catalog.find(key)
        if entry is not None and run.frame[key].null_count() < run.frame.height:
            found.add(entry.layer)
    return found


def empty_layers(run: Run, d: Diagnosis) -> list[str]:
    out = []
    logged = _layer_logged(run)
    for layer, verdict in d.layers.items():
        if verdict != "ok" or layer in logged:
            continue
        judged = [f for f in d.findings if f.layer == layer and f.status != "skipped"]
        if not any(_read(run, f) for f in judged):
            out.append(f"layer {layer} is ok, but the run logged no metric of it and no check of it judged one: "
                       + "; ".join(f"{f.check} {f.status} on {f.metrics}: {f.message['en']}" for f in judged))
    return out + _report_says_nothing_logged(run, d)


def _report_says_nothing_logged(run: Run, d: Diagnosis) -> list[str]:
    """The report's words under an OK: a layer judged ok on what its checks read never reads "This run logged
    no metric of this layer." (report.html.j2, ``no_charts``) — it points to the curves they read."""
    html = render_html(build_page([run], [d]), cdn=True)
    out = []
    for layer, verdict in d.layers.items():
        section = html.split(f'id="layer-{layer}"', 1)[1].split("</section>", 1)[0]
        if verdict == "ok" and "rlv-no-charts" in section:
            judged = [f"{f.check} on {', '.join(f.metrics)}" for f in d.findings
                      if f.layer == layer and f.status != "skipped"]
            out.append(f"layer {layer} is ok on {'; '.join(judged)}, but the report says the run logged no metric "
                       "of it")
    return out


# --- 6. numbers quoted as levels ------------------------------------------------------------------------------

#: what a message calls a series in words, besides its key ("reward": the run's reward; None: a series this
#: test does not look up, which ends the reach of a key named before it)
_WORDS: dict[str, str | None] = {"Entropy": "actor/entropy", "entropy": "actor/entropy", "熵": "actor/entropy",
                                 "clip fraction": "actor/pg_clipfrac", "reward": "reward", "margin": None,
                                 "response length": "response_length/mean", "aborted share": None}
#: a level quoted: from X to Y, X → Y, level/median/peak/lowest X, at X (从 X 升到 Y, 中位数 X, 峰值 X) — not a share, a ratio,
#: a count of steps or a step number
_LEVEL = re.compile(rf"(?<![\w@/.])(?:from ({NUM}) to ({NUM})|({NUM}) → ({NUM})|(?:level|median) (?:of )?({NUM})"
                    rf"|\bat ({NUM})|\b(?:peak|maximum|max|highest|lowest|best|worst) ({NUM})"
                    rf"|从 ({NUM}) \S{{0,3}}到 ({NUM})|(?:中位数|水平|峰值|最大值?|最高|最低|最好)为? ?({NUM}))"
                    rf"(?!\.?\d)(?! ?(?:steps?\b|×|%|倍|个|步|s\b|tokens?\b))")


#: a level quoted for the start or the end of the run: a value of its first (last) third, where every check's
#: window for "first"/"last" (its first value, a tenth, a fifth, a window of 10-20 steps) lies
_EDGE = {"start": re.compile(rf"(?<![\w@/.])(?:({NUM}) at the start|({NUM}) early|\bfirst ({NUM})|started at ({NUM})"
                             rf"|开始 ?({NUM})|前期(?:中位数)? ?({NUM}))(?!\.?\d)(?! ?(?:steps?\b|×|%|倍|个|步))"),
         "end": re.compile(rf"(?<![\w@/.])(?:({NUM}) at the end|({NUM}) late|\blast ({NUM})|ends at ({NUM})"
                           rf"|结束(?:时为)? ?({NUM})|最后 ?({NUM})|后期 ?({NUM}))(?!\.?\d)(?! ?(?:steps?\b|×|%|倍|个|步))")}


def _tolerance(number: str) -> float:
    """Half a unit of the last digit printed."""
    mantissa, _, exp = number.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10 ** (-decimals) * 10 ** (int(exp) if exp else 0)


def _clauses(text: str) -> list[str]:
    return [c for c in re.split(r"[;；:：—。]|\. | while |，?而", text) if c]


def _named(clause: str, before: int, run: Run, keys: Iterable[str], reward: str | None) -> str | None:
    """The series a number at ``before`` in ``clause`` is quoted for: the last key (or word for one) named before
    it; a word inside a key (``reward`` in ``critic/rewards/mean``) is that key."""
    head = clause[:before]
    found = [(i, i + len(k), k) for k in keys if (i := head.rfind(k)) >= 0]
    found += [(i, i + len(w), reward if t == "reward" else t) for w, t in _WORDS.items() if (i := head.rfind(w)) >= 0]
    found = [m for m in found if not any(o[0] <= m[0] and m[1] <= o[1] and o[1] - o[0] > m[1] - m[0] for o in found)]
    if not found:
        return None
    key = max(found, key=lambda m: m[0])[2]
    return None if key is None or _values(run, key) is None else key


def _window(run: Run, key: str, which: str) -> np.ndarray | None:
    """The values ``key`` took over the whole run, its first third or its last third (a validation column: all)."""
    v = _values(run, key)
    if v is None or which == "all" or key not in run.frame.columns:
        return v
    third = max(1, -(-len(v) // 3))
    return v[:third] if which == "start" else v[-third:]


def _quoted(run: Run, f: Finding, text: str) -> Iterable[tuple[str, str, str, np.ndarray]]:
    """``(number, key, window, values)`` for every level ``text`` quotes for a series it names."""
    # a validation column named by a bare word ("loss") cannot be told from the word in a sentence
    keys = {k for k in [*run.metrics, *(c for c in _columns(run) if "/" in c)] if k in text} | set(f.metrics)
    reward = next((k for k in [*f.metrics, *REWARDS] if k in REWARDS and k in run.metrics), None)
    for clause in _clauses(text):
        for which, pattern in (("all", _LEVEL), *_EDGE.items()):
            for m in pattern.finditer(clause):
                key = _named(clause, m.start(), run, keys, reward)
                v = None if key is None else _window(run, key, which)
                if key is not None and v is not None:
                    yield from ((number, key, which, v) for number in m.groups() if number is not None)


def quoted_levels(run: Run, d: Diagnosis) -> list[str]:
    out = []
    for f in d.findings:
        if f.status == "skipped":
            continue
        for lang, text in f.message.items():
            for number, key, which, v in _quoted(run, f, text):
                x, tol, lo, hi = float(number), _tolerance(number), float(np.min(v)), float(np.max(v))
                if not lo - tol <= x <= hi + tol:
                    where = "" if which == "all" else f" at the {which}"
                    out.append(f"{f.check} ({lang}): quotes {number} for {key}{where}, which ranged "
                               f"{lo:.4g}–{hi:.4g} there: {text}")
    return out


# --- 7. advice against the evidence ---------------------------------------------------------------------------

def _lr_of(f: Finding) -> str:
    """The learning rate a finding's advice speaks of: the critic's for a finding on the critic."""
    return "critic/lr" if any(m.startswith("critic/vf") for m in f.metrics) else "actor/lr"


def _lr_rose(run: Run, d: Diagnosis, f: Finding) -> str | None:
    rose = [g for g in d.findings if g.check == "lr_schedule" and g.status in VERDICT_STATUSES
            and g.metrics[:1] == (_lr_of(f),) and any(w in g.template for w in ("jump", "spike", "restart"))]
    return f"lr_schedule found {_lr_of(f)} going up ({rose[0].template})" if rose else None


def _lr_zero(run: Run, d: Diagnosis, f: Finding) -> str | None:
    sv = _steps_values(run, _lr_of(f))
    if sv is None:
        return None
    at = _when(f, sv[0], run)
    level = sv[1][at] if at.any() else sv[1][-1:]
    return f"{_lr_of(f)} is 0 there" if float(np.max(np.abs(level))) == 0.0 else None


def _reward_position(run: Run, f: Finding) -> float | None:
    found = _reward(run, f)
    if found is None:
        return None
    steps, values, lo, hi = found
    at = _when(f, steps, run)
    return (float(np.median(values[at] if at.any() else values)) - lo) / max(hi - lo, 1e-12)


def _reward_floor(run: Run, d: Diagnosis, f: Finding) -> str | None:
    pos = _reward_position(run, f)
    return f"the reward is at its floor there ({pos:.0%} of its range)" if pos is not None and pos <= 0.1 else None


def _reward_top(run: Run, d: Diagnosis, f: Finding) -> str | None:
    pos = _reward_position(run, f)
    return f"the reward is at its top there ({pos:.0%} of its range)" if pos is not None and pos >= 0.9 else None


def _not_truncated(run: Run, d: Diagnosis, f: Finding) -> str | None:
    for key in TRUNCATION:
        sv = _steps_values(run, key)
        if sv is not None:
            after = sv[1][sv[0] >= (f.onset_step if f.onset_step is not None else sv[0][0])]
            return f"{key} is at most {np.max(after):.3g} there" if len(after) and np.max(after) < 0.01 else None
    return None


def _entropy_surged(run: Run, d: Diagnosis, f: Finding) -> str | None:
    """entropy_surge found the entropy rising by the finding's onset."""
    up = [g for g in d.findings if g.check == "entropy_surge" and g.status in VERDICT_STATUSES
          and (g.onset_step is None or f.onset_step is None or g.onset_step <= f.onset_step)]
    return f"entropy_surge found the entropy rising from step {up[0].onset_step}" if up else None


@dataclass(frozen=True)
class Advice:
    """An advice phrase, the evidence that rules it out, and why; ``unless``: the words of a sentence that gives
    the advice only under its own condition ("too easy (add harder prompts); too hard (add easier ones)") —
    such a sentence does not tell a run on the other side of the condition to do it, it tells it which side it
    is on."""

    phrase: re.Pattern[str]
    ruled_out: Callable[[Run, Diagnosis, Finding], str | None]
    why: str
    unless: re.Pattern[str] | None = None


ADVICE: list[Advice] = [
    Advice(re.compile(r"raise (?:the|its) learning rate|learning rate is too (?:small|low)|调高学习率|学习率太小", re.I),
           _lr_rose, "a rate that just jumped up is not too small"),
    Advice(re.compile(r"lower (?:the|its) learning rate|调低学习率|降低学习率", re.I), _lr_zero,
           "a rate of 0 cannot be lowered: nothing is learning at that rate"),
    Advice(re.compile(r"harder (?:or (?:\w+ ){1,2})?(?:prompts|data)|更难的 ?prompt|更难的数据", re.I), _reward_floor,
           "a reward at its floor says the prompts are already too hard",
           re.compile(r"too easy|near its top|all correct|太简单|接近上限|全对", re.I)),
    Advice(re.compile(r"easier prompts|更简单的 ?prompt|更容易的 ?prompt", re.I), _reward_top,
           "a reward at its top says the prompts are already easy",
           re.compile(r"too hard|near its bottom|all wrong|太难|接近下限|全错", re.I)),
    Advice(re.compile(r"(?:raise|increase) max_response_length|增大 max_response_length", re.I), _not_truncated,
           "nothing is cut at the length limit, so a higher limit changes nothing"),
    Advice(re.compile(r"raise the entropy (?:bonus|coefficient)|调大熵系数", re.I), _entropy_surged,
           "more entropy bonus on an entropy already surging feeds the surge",
           re.compile(r"entropy dropped|policy collapse|熵[^。]{0,12}骤降|策略坍缩", re.I)),
]


def advice_against_evidence(run: Run, d: Diagnosis) -> list[str]:
    out = []
    for f in d.findings:
        if f.status not in FINDING_STATUSES:
            continue
        for lang, text in f.advice.items():
            for sentence in re.split(r"(?<=[.。])\s*", text):
                for a in ADVICE:
                    m = a.phrase.search(sentence)
                    if not m or (a.unless is not None and a.unless.search(sentence)):
                        continue
                    reason = a.ruled_out(run, d, f)
                    if reason:
                        out.append(f"{f.check} ({lang}): advises {m.group(0)!r} but {reason} ({a.why})")
    return out


PROPERTIES: dict[str, Callable[[Run, Diagnosis], list[str]]] = {
    "within_noise": lambda run, d: within_noise(d),
    "spike_words": lambda run, d: spike_words(d),
    "at_the_top": at_the_top,
    "found_and_passed": lambda run, d: found_and_passed(d),
    "empty_layers": empty_layers,
    "quoted_levels": quoted_levels,
    "advice": advice_against_evidence,
}


# --- the inputs -----------------------------------------------------------------------------------------------

#: every pathology of the scenario suite and its healthy GRPO and PPO controls, at half and twice the noise and at
#: the low and high entropy scales (the suite's full grid, benchmarks/scenario_suite.py, 1,782 runs, was read once
#: with these properties: it held no contradiction that this grid and the corpus do not show)
GRID = grid([300], [0.5, 2.0], [0.05, 2.0], [0])


def _corpus() -> Iterable[tuple[str, Run]]:
    for run_id, folder, label in corpus_eval.labelled_runs():
        path = corpus_eval.resolve_input(folder, label)
        if path.exists():
            yield run_id, rlvitals.load(path)[0]


def _scenarios(points: Iterable[tuple[int, float, float, int]] = GRID) -> Iterable[tuple[str, Run]]:
    for steps, noise, entropy, seed in points:
        where = f"{steps}-{noise}-{entropy}-{seed}"
        for algo in ("grpo", "ppo"):
            yield f"healthy-{algo}-{where}", run_for(Spec(steps, seed, noise, entropy, algo))
        for name, path in PATHOLOGIES.items():
            at = max(30, min(steps // 2, steps - path.tail))
            yield f"{name}-{where}", run_for(Spec(steps, seed, noise, entropy, path.algorithm, name, at))


@functools.lru_cache(maxsize=1)
def _diagnosed() -> tuple[tuple[str, Run, Diagnosis], ...]:
    return tuple((name, run, rlvitals.diagnose(run)) for name, run in [*_corpus(), *_scenarios()])


def contradictions(inputs: Iterable[tuple[str, Run, Diagnosis]], prop: str) -> list[str]:
    return [f"{name}: {v}" for name, run, d in inputs for v in PROPERTIES[prop](run, d)]


@pytest.mark.slow
@pytest.mark.parametrize("prop", PROPERTIES)
def test_words_never_contradict_numbers(prop: str) -> None:
    found = contradictions(_diagnosed(), prop)
    assert not found, f"{len(found)} contradiction(s):\n" + "\n".join(found)


@pytest.mark.slow
def test_the_inputs_put_every_property_to_work() -> None:
    """A property that reads no words proves nothing: the real inputs hold many of each kind (measured: 20
    alarms speaking of noise, 69 of spikes, 4 tops, 10,742 quoted levels, 506 advices of the table)."""
    said = [(run, f, text) for _, run, d in _diagnosed() for f in d.findings if f.status != "skipped"
            for text in f.message.values()]
    alarms = [text for _, f, text in said if f.status in VERDICT_STATUSES]
    assert sum(any(p.search(t) for p in [*_NOISE_RATIO, *_WITHIN, _NOISE]) for t in alarms) >= 10
    assert sum(bool(_SPIKE.search(t)) for t in alarms) >= 30
    assert sum(bool(_TOP.search(t)) for _, _, t in said) >= 2
    assert sum(1 for run, f, t in said for _ in _quoted(run, f, t)) >= 5000
    assert sum(bool(a.phrase.search(t)) for _, f, _ in said if f.status in FINDING_STATUSES
               for t in f.advice.values() for a in ADVICE) >= 200


# --- each property fails on a case built to violate it --------------------------------------------------------

N = 60


def _run(**series: np.ndarray) -> Run:
    """A run of N steps with a reward between its logged batch min (0) and max (1), and the series given."""
    base = {"critic/score/mean": np.linspace(0.2, 0.5, N), "critic/score/min": np.zeros(N),
            "critic/score/max": np.ones(N), "actor/entropy": np.full(N, 0.5), "actor/grad_norm": np.ones(N)}
    return run_from_series({**base, **{k.replace("__", "/"): v for k, v in series.items()}})


def _finding(check: str, status: str = "warn", message: str = "", advice: str = "", layer: str = "L1",
             metrics: tuple[str, ...] = ("actor/grad_norm",), evidence: Mapping[str, Any] | None = None,
             onset: int | None = 30, template: str = "") -> Finding:
    said = {"en": message, "zh": message}
    return Finding(check, layer, status, {"en": check, "zh": check}, said,  # type: ignore[arg-type]
                   {"en": advice, "zh": advice}, metrics, onset, None, dict(evidence or {}), (),
                   template or status)


def _holds(prop: str, run: Run, *findings: Finding) -> list[str]:
    return PROPERTIES[prop](run, assemble(run, list(findings)))


def test_within_noise_fails_on_a_rise_of_one_noise() -> None:
    run = _run()
    bad = "actor/pg_loss climbed from 0.1 to 0.2 between steps 30 and 50 (20 steps, 1× its step noise of 0.1)."
    assert _holds("within_noise", run, _finding("pg_loss_climb", message=bad))
    assert _holds("within_noise", run, _finding("pg_loss_climb", message="It rose, within noise (±0.1)."))
    assert _holds("within_noise", run, _finding("pg_loss_climb", message="是其单步噪声 0.1 的 1 倍。"))
    assert not _holds("within_noise", run, _finding("pg_loss_climb", message=bad.replace("1×", "6×")))
    # a flat curve's change within noise is its evidence, and a note is no alarm
    flat = "val did not improve over 5 evaluations: its level moved 0.1 → 0.11, within noise (±0.05)."
    assert not _holds("within_noise", run, _finding("val_progress", message=flat))
    assert not _holds("within_noise", run, _finding("pg_loss_climb", status="note", message=bad))


def test_spike_words_fail_below_the_checks_own_ratio() -> None:
    run = _run()
    said = "actor/grad_norm jumped to 3 at step 30, 3× its recent median of 1."
    low, high = {"peak": 3.0, "baseline": 1.0}, {"peak": 30.0, "baseline": 1.0}
    assert _holds("spike_words", run, _finding("grad_norm_spike", message=said, evidence=low))
    assert not _holds("spike_words", run, _finding("grad_norm_spike", message=said, evidence=high))
    assert _holds("spike_words", run, _finding("kl_jump", message="KL 在第 30 步跳升。", evidence={"ratio": 2.0}))
    assert _holds("spike_words", run, _finding("reward_collapse", message="the clip fraction spiked (0.05 → 0.04)"))
    assert not _holds("spike_words", run, _finding("reward_collapse", message="the clip fraction did not spike"))


def test_at_the_top_fails_below_the_top_or_on_truncated_answers() -> None:
    said = "The reward sat at its top there: the data is solved."
    low, top = _run(), _run(critic__score__mean=np.full(N, 0.97))
    assert _holds("at_the_top", low, _finding("reward_std_collapse", message=said, layer="L3"))
    assert not _holds("at_the_top", top, _finding("reward_std_collapse", message=said, layer="L3"))
    cut = _run(critic__score__mean=np.full(N, 0.97), response_length__clip_ratio=np.full(N, 0.4))
    assert _holds("at_the_top", cut, _finding("reward_std_collapse", message="任务已经做对了。", layer="L3"))
    # the steps a message names by its metric being exactly 0 are the steps it speaks of
    std = np.where(np.arange(N) % 10 == 0, 0.0, 0.3)
    reward = np.where(std == 0, 1.0, 0.3)
    zero = _finding("reward_std_collapse", message="group/reward_std/mean was exactly 0 on 6 steps with the reward "
                    "at its top there.", metrics=("group/reward_std/mean",), layer="L3")
    assert not _holds("at_the_top", _run(critic__score__mean=reward, group__reward_std__mean=std), zero)
    assert _holds("at_the_top", _run(critic__score__mean=1.3 - reward, group__reward_std__mean=std), zero)


def test_found_and_passed_fails_on_one_metric_judged_twice() -> None:
    run = _run()
    warn = _finding("kl_jump", metrics=("actor/kl_loss",))
    ok = _finding("kl_jump", status="ok", metrics=("actor/kl_loss",))
    assert _holds("found_and_passed", run, warn, ok)
    assert not _holds("found_and_passed", run, warn, replace(ok, metrics=("actor/ppo_kl",)))


def test_empty_layers_fail_on_an_ok_that_read_nothing() -> None:
    run = _run()
    unread = _finding("oom_risk", status="ok", layer="efficiency", metrics=("global_seqlen/max",), onset=None)
    assert _holds("empty_layers", run, unread)
    assert not _holds("empty_layers", run, replace(unread, metrics=("actor/grad_norm",)))
    # a layer judged ok on a metric the catalog draws in another layer: the report points there
    reward = _finding("reward_collapse", status="ok", layer="L5", metrics=("critic/score/mean",), onset=None)
    d = assemble(run, [reward])
    assert d.layers["L5"] == "ok" and not empty_layers(run, d)
    skipped = replace(unread, status="skipped")
    d = assemble(run, [skipped])
    assert d.layers["efficiency"] == "skipped" and not empty_layers(run, d)
    assert empty_layers(run, replace(d, layers={**d.layers, "efficiency": "ok"}))


def test_quoted_levels_fail_on_a_value_the_series_never_had() -> None:
    run = _run()
    ok = "critic/score/mean rose from 0.2 to 0.5 while actor/entropy stayed at 0.5."
    assert not _holds("quoted_levels", run, _finding("reward_flat", message=ok, layer="L5"))
    for bad in ("critic/score/mean rose from 0.2 to 0.9.", "critic/score/mean (median 1.5) stayed.",
                "critic/score/mean rose; actor/entropy sat at 0.7.", "Entropy 0.5 → 0.05",
                "critic/score/mean 从 0.2 升到 0.8。"):
        assert _holds("quoted_levels", run, _finding("reward_flat", message=bad, layer="L5")), bad
    # printed to 3 significant digits: 0.2 is any value that rounds to it
    assert not _holds("quoted_levels", _run(critic__score__mean=np.linspace(0.204, 0.5, N)),
                      _finding("reward_flat", message="critic/score/mean rose from 0.2 to 0.5.", layer="L5"))


def _advice_case(index: int) -> tuple[Run, list[Finding], Finding]:
    """The run and findings that rule out ``ADVICE[index]``, and a finding giving that advice."""
    said = ["Raise the learning rate.", "Lower the learning rate.", "Add harder prompts.", "Add easier prompts.",
            "Increase max_response_length.", "Raise the entropy bonus."][index]
    f = _finding("grad_norm_vanishing", advice=said, onset=40)
    run, others = _run(), []
    if index == 0:
        others = [_finding("lr_schedule", template="warn_jump", metrics=("actor/lr",), onset=20)]
    elif index == 1:
        run = _run(actor__lr=np.where(np.arange(N) < 35, 1e-6, 0.0))
    elif index == 2:
        run = _run(critic__score__mean=np.full(N, 0.02))
    elif index == 3:
        run = _run(critic__score__mean=np.full(N, 0.99))
    elif index == 4:
        run = _run(response_length__clip_ratio=np.zeros(N))
    else:
        others = [_finding("entropy_surge", metrics=("actor/entropy",), layer="L4", onset=20)]
    return run, others, f


@pytest.mark.parametrize("index", range(len(ADVICE)))
def test_advice_fails_against_the_evidence(index: int) -> None:
    run, others, f = _advice_case(index)
    assert _holds("advice", run, f, *others), ADVICE[index].why
    # said only under its own condition, the same advice tells the run which side it is on
    conditional = {2: "With the reward near its top the data is too easy (add harder prompts).",
                   3: "Too hard (all wrong): add easier prompts.",
                   5: "If entropy dropped before (policy collapse), raise the entropy bonus."}
    if index in conditional:
        assert not _holds("advice", run, replace(f, advice={"en": conditional[index], "zh": ""}), *others)


def test_every_advice_rule_has_a_reason() -> None:
    assert all(a.why for a in ADVICE) and len(ADVICE) == len({a.phrase.pattern for a in ADVICE})
