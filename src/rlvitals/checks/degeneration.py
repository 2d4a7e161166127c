"""Degenerate text, read from the responses alone (docs/reading-rules.md#text-degeneration).

The reward can keep rising while the policy writes garbage — a reward model or a lenient parser still pays for
it — and a run without validation has nothing else to show it. The rollout analysis reads every step's
responses (:mod:`rlvitals.rollout.degeneration`): the share holding a long run of one short unit, the share of
words that are no word of any language, and the vocabulary of a response. This check reads those series as the
other rollout checks read theirs (:mod:`.rollout`): shares held above fixed bands, and changes against the run's
own first steps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import signals
from ._base import CheckFn, Outcome, RunView, Series
from ._reward import reward_of
from ._shared import progress
from .rollout import _ends, _onset, _rise, _stretch

__all__ = ["FUNCTIONS", "text_degeneration"]

#: the two shares, with the word that names them in the records' templates
SHARES = (("rollout/degenerate/char_run", "runs"), ("rollout/degenerate/nonword", "nonwords"))


def _share(s: Series, kind: str, p: Mapping[str, Any]) -> Outcome | None:
    """A share held above its bands, else risen from its start; None when neither."""
    bands = {"fail": p[f"{kind}_fail"], "warn": p[f"{kind}_warn"], "window": p["window"], "min_steps": p["min_steps"],
             "rise": p[f"{kind}_rise"], "share": p["share"]}
    held = _stretch(s, bands, kind)
    if held:
        return held[0]
    rose, values = _rise(s, bands)
    if not rose:
        return None
    onset = values["onset"]
    return Outcome("warn", f"{kind}_rising", values, onset, (onset, s.step(len(s) - 1)), (s.key,),
                   {**values, "threshold": p[f"{kind}_rise"]})


def _vocab(view: RunView, p: Mapping[str, Any]) -> Outcome | None:
    """Distinct words per response fallen by ``vocab_drop`` of their start while the distinct share fell by
    ``ratio_drop``: the responses repeat a smaller vocabulary, not merely say less."""
    distinct, ratio = view.series("rollout/vocab/distinct"), view.series("rollout/vocab/ratio")
    if distinct is None or ratio is None:
        return None
    d0, d1, _ = _ends(distinct.values, p["share"])
    r0, r1, _ = _ends(ratio.values, p["share"])
    if d0 <= 0 or r0 <= 0 or d1 > (1 - p["vocab_drop"]) * d0 or r1 > (1 - p["ratio_drop"]) * r0:
        return None
    onset = distinct.step(_onset(signals.rolling_level(distinct.values, p["window"]), d0 - (d0 - d1) / 4, True))
    values = {"first": d0, "last": d1, "ratio_first": r0, "ratio_last": r1, "onset": onset}
    return Outcome("warn", "vocab", values, onset, (onset, distinct.step(len(distinct) - 1)),
                   (distinct.key, ratio.key), {**values, "threshold": p["vocab_drop"]})


def _with_reward(view: RunView, out: Outcome, p: Mapping[str, Any]) -> Outcome:
    """The finding with the training reward's start and end in its evidence when the reward rose: garbage that is
    paid for (the advice says what that means)."""
    reward = reward_of(view)
    if reward is None:
        return out
    pr = progress(reward.values, z=p["z"])
    if not pr.rising:
        return out
    return Outcome(out.status, out.template, out.values, out.onset_step, out.span, (*out.metrics, reward.key),
                   {**out.evidence, "reward": reward.key, "reward_from": pr.start, "reward_to": pr.end})


def text_degeneration(view: RunView, p: Mapping[str, Any]) -> list[Outcome]:
    """Degenerate responses (docs/reading-rules.md#text-degeneration): the share of responses with a long run,
    or of non-words, held at its ``fail`` band fails, at its ``warn`` band warns (for ``min_steps`` on
    ``window``-step levels); a rise of its ``rise`` (absolute) to twice its start warns; distinct words per
    response fallen by ``vocab_drop`` with their share fallen by ``ratio_drop`` warns. The worst is told (the
    training reward's rise, when it rose, in its evidence: the garbage is paid for). Skipped without the series
    (no response text) or with fewer than ``min_steps`` steps."""
    found = [(s, kind) for key, kind in SHARES if (s := view.series(key, min_points=1)) is not None]
    if not found:
        return []
    n = max(len(s) for s, _ in found)
    if n < p["min_steps"]:
        return [Outcome("skipped", "short", {"n": n, "needed": p["min_steps"]}, metrics=tuple(s.key for s, _ in found))]
    outs = [o for s, kind in found if (o := _share(s, kind, p)) is not None]
    vocab = _vocab(view, p)
    outs += [vocab] if vocab is not None else []
    if not outs:
        values = {kind: float(_ends(s.values, p["share"])[1]) for s, kind in found}
        values.setdefault("runs", float("nan"))
        values.setdefault("nonwords", float("nan"))
        return [Outcome("ok", "ok", values, metrics=tuple(s.key for s, _ in found), evidence=values)]
    worst = min(outs, key=lambda o: (o.status != "fail", o.onset_step if o.onset_step is not None else 0))
    return [_with_reward(view, worst, p)]


FUNCTIONS: dict[str, CheckFn] = {
    "text_degeneration": text_degeneration,
}
