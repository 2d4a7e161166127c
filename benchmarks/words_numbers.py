"""Words never contradict numbers (issue 34, item 4): what a diagnosis says, held against the numbers it read.

Each property is a function of a run and its diagnosis that returns its contradictions, one sentence each
naming the check, the language, the words and the numbers (an empty list: the property holds):

1. ``within_noise``: a warn/fail message never says the change it reports is within noise.
2. ``spike_words``: "spike", "jump", "surge" (突刺, 跳升, 飙升) in a warn/fail message only when the finding's
   own evidence ratio reaches the check's own threshold (:data:`SPIKE_RULES`), and a surge quoted as
   ``a → b`` goes up.
3. ``at_the_top``: "at its top", "solved" (已经做对, 处于顶部) only when the reward is in the top tenth of its
   range (the logged batch min/max, else the run's own 2nd-98th percentile) and the responses are not
   truncated.
4. ``found_and_passed``: a check is never both a finding (note/warn/fail) and passed (ok) for the same metrics.
5. ``empty_layers``: a layer is never ``ok`` when none of its checks judged anything the run logged, and the
   report never says "This run logged no metric of this layer." under an OK (it points to the curves the
   checks read).
6. ``quoted_levels``: a number quoted as a series' level ("from X to Y", "X → Y", "level X", "median X",
   "at X") is a value the series took, to the precision printed.
7. ``advice``: advice never asks for what the evidence rules out (:data:`ADVICE`).

:func:`contradictions` runs all seven on one run; benchmarks/corpus_eval.py counts them on every corpus run
(the figure ``contradictions``, which must be 0), and tests/test_words_numbers.py runs them on the corpus and
the scenario suite and shows each one failing on a case built to violate it.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlvitals.catalog import load_catalog
from rlvitals.checks import FINDING_STATUSES, VERDICT_STATUSES, load_checks
from rlvitals.diagnosis import Diagnosis, Finding
from rlvitals.report.html import render_html
from rlvitals.report.model import build_page
from rlvitals.run.run import Run

__all__ = ["ADVICE", "PROPERTIES", "SPIKE_RULES", "Advice", "advice_against_evidence", "at_the_top",
           "contradictions", "empty_layers", "found_and_passed", "quoted_levels", "spike_words",
           "within_noise", "words_read"]

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
_NOT_SPIKE = re.compile(r"(?:not|never|no|without)\s+(?:\w+\s+){0,3}(?:spik|jump|surg)\w*"
                        r"|没有[^，。；]{0,6}(?:突刺|跳升|飙升)", re.I)
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
        return np.asarray(np.isin(steps, zeros[0][zeros[1] <= 0]))
    if f.points:
        return np.asarray(np.isin(steps, np.asarray(f.points)))
    if f.span is not None:
        return (steps >= f.span[0]) & (steps <= f.span[1])
    if f.onset_step is not None:
        return steps >= f.onset_step
    return np.asarray(steps >= steps[-max(1, len(steps) // 5)])


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
    # the report's words are read only where they could be wrong: a layer judged ok that logged nothing
    unlogged_ok = any(verdict == "ok" and layer not in logged for layer, verdict in d.layers.items())
    return out + (_report_says_nothing_logged(run, d) if unlogged_ok else [])


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
#: a level quoted: from X to Y, X → Y, level/median/peak/lowest X, at X (从 X 升到 Y, 中位数 X, 峰值 X) — not a
#: share, a ratio, a count of steps or a step number
_LEVEL = re.compile(rf"(?<![\w@/.])(?:from ({NUM}) to ({NUM})|({NUM}) → ({NUM})|(?:level|median) (?:of )?({NUM})"
                    rf"|\bat ({NUM})|\b(?:peak|maximum|max|highest|lowest|best|worst) ({NUM})"
                    rf"|从 ({NUM}) \S{{0,3}}到 ({NUM})|(?:中位数|水平|峰值|最大值?|最高|最低|最好)为? ?({NUM}))"
                    rf"(?!\.?\d)(?! ?(?:steps?\b|×|%|倍|个|步|s\b|tokens?\b))")


#: a level quoted for the start or the end of the run: a value of its first (last) third, where every check's
#: window for "first"/"last" (its first value, a tenth, a fifth, a window of 10-20 steps) lies
_EDGE = {"start": re.compile(rf"(?<![\w@/.])(?:({NUM}) at the start|({NUM}) early|\bfirst ({NUM})|started at ({NUM})"
                             rf"|开始 ?({NUM})|前期(?:中位数)? ?({NUM}))(?!\.?\d)(?! ?(?:steps?\b|×|%|倍|个|步))"),
         "end": re.compile(rf"(?<![\w@/.])(?:({NUM}) at the end|({NUM}) late|\blast ({NUM})|ends at ({NUM})"
                           rf"|结束(?:时为)? ?({NUM})|最后 ?({NUM})|后期 ?({NUM}))"
                           rf"(?!\.?\d)(?! ?(?:steps?\b|×|%|倍|个|步))")}


def _tolerance(number: str) -> float:
    """Half a unit of the last digit printed."""
    mantissa, _, exp = number.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (-decimals) * 10.0 ** (int(exp) if exp else 0)


def _clauses(text: str) -> list[str]:
    return [c for c in re.split(r"[;；:：—。]|\. | while |，?而", text) if c]


def _named(clause: str, before: int, run: Run, keys: Iterable[str], reward: str | None) -> str | None:
    """The series a number at ``before`` in ``clause`` is quoted for: the last key (or word for one) named before
    it; a word inside a key (``reward`` in ``critic/rewards/mean``) is that key."""
    head = clause[:before]
    found: list[tuple[int, int, str | None]] = [(i, i + len(k), k) for k in keys if (i := head.rfind(k)) >= 0]
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
    Advice(re.compile(r"raise (?:the|its) learning rate|learning rate is too (?:small|low)"
                      r"|调高学习率|学习率太小", re.I), _lr_rose, "a rate that just jumped up is not too small"),
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


def contradictions(run: Run, d: Diagnosis) -> list[str]:
    """Every contradiction of every property on one diagnosed run, each led by its property's name.

    >>> contradictions(run, rlvitals.diagnose(run))  # doctest: +SKIP
    []
    """
    return [f"{name}: {said}" for name, prop in PROPERTIES.items() for said in prop(run, d)]


def words_read(run: Run, d: Diagnosis) -> Counter[str]:
    """How many words of each kind the properties held against numbers: alarm messages speaking of noise or of
    spikes, messages saying "at its top", levels quoted for a series, advice phrases of :data:`ADVICE` (a
    property that reads no words proves nothing)."""
    said = [(f, text) for f in d.findings if f.status != "skipped" for text in f.message.values()]
    alarms = [text for f, text in said if f.status in VERDICT_STATUSES]
    return Counter({
        "noise": sum(any(p.search(t) for p in [*_NOISE_RATIO, *_WITHIN, _NOISE]) for t in alarms),
        "spike": sum(bool(_SPIKE.search(t)) for t in alarms),
        "top": sum(bool(_TOP.search(t)) for _, t in said),
        "levels": sum(1 for f, t in said for _ in _quoted(run, f, t)),
        # counted per message and advice text, in each language, as first measured
        "advice": sum(bool(a.phrase.search(t)) for f, _ in said if f.status in FINDING_STATUSES
                      for t in f.advice.values() for a in ADVICE),
    })
