"""The report's page model: runs, their diagnoses and optional rollouts in, one JSON-able dict out.

Everything a report shows is decided here, once, so the HTML file and a later live dashboard are
two renderings of the same dict. Sections follow the diagnosis' reading order (did the model get
better, is it stable, is it efficient, is the data still teaching …); each has the verdict of every
run, its findings and the charts of the metrics whose catalog layer it is. Nothing is diagnosed
here: verdicts, onsets and spans come from the :class:`~rlvitals.diagnosis.Diagnosis`, metric
names and explanations from the catalog.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from .._version import __version__
from ..catalog.catalog import Catalog, load_catalog
from ..catalog.views import load_views
from ..checks import FINDING_STATUSES, RunView, core_tracks
from ..diagnosis import LAYER_NAMES, READING_ORDER, Diagnosis, Finding, with_rollouts
from ..errors import RlvitalsError
from ..run.run import Run
from ..words import Words, in_lang
from .charts import Page, add_markers, stacked, trace
from .compare import comparison_table
from .forecast import forecast_section
from .overview import clock, first_look
from .rollouts import available_steps, nearest, rollout_section
from .sigma import BAND_KEYS, sigma_section
from .story import story_json
from .tokens import token_axes

if TYPE_CHECKING:
    from ..rollout import Progress
    from ..rollout.analysis import RolloutAnalysis

BUCKETS = 400  # about one bucket per two pixels of a full-width chart: at most 1600 points a line
_STATS = ("min", "max", "mean", "std", "balanced_min", "balanced_max", "minmax_diff")
_PHASE = re.compile(r"timing_s/(?!step$)[^/]+")  # one phase of a step; timing_s/step is their total
COMPARE = ("timing_per_token_ms/", "perf/throughput", "perf/time_per_step", "timing_s/step")
#: the statuses that open a layer's curves and put a finding's curves beside the answer (a note waits below)
ACT = ("fail", "warn")
#: at most this many curves are drawn beside the answer; the others stay in their layers (which are open)
ANSWER_CHARTS = 12
#: a validation column that is one source's mean over k samples (``acc/mean@16``), the headline of a source the
#: checks have no core curve for
_MEAN_AT = re.compile(r"^[^/]+/mean@(\d+)$")
#: keys that differ only in k or a quantile share a chart (pass@1, pass@4 …; correct_by_length/q1 …)
_FAMILY = (
    (re.compile(r"^(.+)@\d+$"), r"\1@k"),
    (re.compile(r"^(rollout/correct_by_length)/q\d+$"), r"\1"),
    (re.compile(r"^(group/zero_std)/.+$"), r"\1"),
    (re.compile(r"^(group/reward_std)/p\d+$"), r"\1/{quantile}"),
)


def _stem(key: str) -> str:
    """The chart a key goes on: keys differing only in their statistic (``…/min``, ``…/max``,
    ``…/mean``), in k (``pass@k``) or in a quantile share one."""
    for pattern, repl in _FAMILY:
        if pattern.match(key):
            return pattern.sub(repl, key)
    head, _, last = key.rpartition("/")
    return head if head and last in _STATS else key


def unique_labels(paths: Sequence[str]) -> list[str]:
    """A short name per run: its file or folder name, with as many parent folders as it takes to tell
    apart runs whose names clash (``exp1/train.log``, ``exp2/train.log``); the same path twice is numbered.

    Example:
        >>> unique_labels(["runs/exp1/train.log", "runs/exp2/train.log", "/logs/ppo.log", "/logs/ppo.log"])
        ['exp1/train.log', 'exp2/train.log', 'ppo.log (1)', 'ppo.log (2)']
    """
    parts = [Path(p).parts or (p,) for p in paths]
    depth = [1] * len(paths)

    def label(i: int) -> str:
        return Path(*parts[i][-depth[i]:]).as_posix()

    while True:  # grow only the labels that clash with another path's (the same path twice is numbered)
        names = [label(i) for i in range(len(paths))]
        grow = [i for i in range(len(paths)) if depth[i] < len(parts[i])
                and any(names[j] == names[i] and paths[j] != paths[i] for j in range(len(paths)))]
        if not grow:
            break
        for i in grow:
            depth[i] += 1
    labels = [label(i) for i in range(len(paths))]
    seen, counted = Counter(labels), Counter[str]()
    out = []
    for name in labels:
        counted[name] += 1
        out.append(f"{name} ({counted[name]})" if seen[name] > 1 else name)
    return out


def _line_charts(page: Page, runs: Sequence[tuple[str, Run]], keys: Sequence[str]) -> list[str]:
    """One chart per stem of ``keys``, one line per (run, key) that has data."""
    stems: dict[str, list[str]] = {}
    for key in keys:
        stems.setdefault(_stem(key), []).append(key)
    cids = []
    many = len(runs) > 1
    for members in stems.values():
        traces = []
        for rid, run in runs:
            for key in members:
                if key not in run.frame.columns:
                    continue
                x, y = run.series(key, train_only=False)
                if len(x):
                    name = f"{page.labels[rid]}: {key}" if many else key
                    traces.append(trace(name, rid, key, x, y, page.buckets))
        if traces:
            cids.append(page.add(members, traces))
    return cids


def _validation_charts(page: Page, runs: Sequence[tuple[str, Run]]) -> list[dict[str, Any]]:
    """One chart per validation data source, a line per (run, variable/statistic); only each run's headline
    line of the source (:func:`_headline`) is drawn at first, the others (best@k, maj@k, worst@k, std) wait in
    the legend, ``hidden``. ``headline`` names the source's headline lines."""
    sources: dict[str, list[tuple[str, Run, str, str]]] = {}
    for rid, run in runs:
        for source, frame in run.validation.items():
            for label in frame.columns[1:]:
                sources.setdefault(source, []).append((rid, run, label, _val_key(run, source, label)))
    heads = {rid: _headlines(run) for rid, run in runs}
    out = []
    for source, members in sources.items():
        traces = []
        for rid, run, label, key in members:
            frame = run.validation[source].drop_nulls(label)
            x, y = frame["step"].to_numpy(), frame[label].cast(float).to_numpy()
            name = f"{page.labels[rid]}: {label}" if len(runs) > 1 else label
            head = heads[rid].get(source) or _headline([m[2] for m in members if m[0] == rid])
            traces.append(trace(name, rid, key, x, y, page.buckets) | {"hidden": label != head})
        traces.sort(key=lambda t: t["hidden"])  # the headline first: the first colour, the top of the legend
        # the checks name a validation curve source/variable (core_tracks); the run, val-core/source/variable
        aliases = {f"{source}/{m[2]}": m[3] for m in members}
        cid = page.add([m[3] for m in members], traces, title={"en": source, "zh": source}, aliases=aliases)
        shown = list(dict.fromkeys(t["name"].rpartition(": ")[2] for t in traces if not t["hidden"]))
        page.charts[cid]["headline_keys"] = sorted({t["key"] for t in traces if not t["hidden"]})
        out.append({"source": source, "chart": cid, "headline": shown,
                    "hidden": sum(t["hidden"] for t in traces)})
    return out


def _headlines(run: Run) -> dict[str, str]:
    """``{source: column}``: the core validation curve of each source, the one the checks judge (the mean
    accuracy, else reward, over the most samples: ``acc/mean@16``; the ``eval`` source's score or loss)."""
    return {t.source: t.label for t in core_tracks(RunView(run))}


def _headline(columns: Sequence[str]) -> str:
    """The headline of a source the checks judge no curve of: its mean over the most samples, else its
    first column.

    Example:
        >>> _headline(["len/best@4/mean", "len/mean@2", "len/mean@8", "len/std@8"]), _headline(["x", "y"])
        ('len/mean@8', 'x')
    """
    means = [(int(m[1]), c) for c in columns if (m := _MEAN_AT.match(c))]
    return max(means)[1] if means else columns[0]


def _val_key(run: Run, source: str, label: str) -> str:
    """The canonical key behind a validation column (Run.validation names columns by variable/statistic
    within their source): the run's key that ends with ``source/label`` (or is ``eval/label``)."""
    for key in run.metrics:
        if key in (label, f"eval/{label}") or key.endswith(f"{source}/{label}"):
            return key
    return label


def _layer_keys(run: Run, catalog: Catalog) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {layer: [] for layer in READING_ORDER}
    for key in run.metrics:
        entry = catalog.find(key)
        logged = run.frame[key].null_count() < run.frame.height
        if entry is not None and entry.layer in out and logged:
            out[entry.layer].append(key)
    return out


def _findings(diagnoses: Sequence[tuple[str, Diagnosis]]) -> list[tuple[str, str, Finding]]:
    return [(f"{rid}-f{i}", rid, f) for rid, d in diagnoses for i, f in enumerate(d.findings)]


def _finding_json(fid: str, rid: str, f: Finding, charts: list[str], rollout_step: int | None,
                  page: Page) -> dict[str, Any]:
    return {"id": fid, "run": rid, "check": f.check, "layer": f.layer, "status": f.status, "title": dict(f.title),
            "message": dict(f.message), "advice": dict(f.advice), "metrics": list(f.metrics),
            "onset": f.onset_step, "span": list(f.span) if f.span else None, "points": sorted(set(f.points)),
            "evidence": [[k, _evidence(v)] for k, v in f.evidence.items() if k != "spike_rollouts"], "charts": charts,
            "chart_keys": {cid: _on_chart(f, page.charts[cid]) for cid in charts}, "rollout_step": rollout_step,
            "rollout_links": list(f.evidence.get("spike_rollouts", ()))}  # type: ignore[call-overload]


def _on_chart(f: Finding, chart: dict[str, Any]) -> list[str]:
    """The finding's metrics that ``chart`` draws, by the names the finding gives them: what its link
    to the chart says (a finding reading four metrics links to three charts)."""
    shown = set(chart["keys"]) | set(chart["aliases"])
    return [m for m in f.metrics if m in shown]


def _evidence(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)) and len(value) > 12:
        return ", ".join(map(str, value[:12])) + f" … ({len(value)})"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def _fill(sections: list[dict[str, Any]], findings: list[dict[str, Any]], page: Page, first: set[str]) -> None:
    """Each section's findings, its cards, and where the curves its checks read are drawn when not in it."""
    for section in sections:
        section["findings"] = [f for f in findings if f["layer"] == section["id"]]
        section["cards"] = cards(section["findings"])
        section["open"] = any(f["status"] in ACT for f in section["findings"])  # its curves shown, not folded
        section["elsewhere"] = _read_elsewhere(page, section, first)


def _read_elsewhere(page: Page, section: dict[str, Any], first: set[str]) -> list[str]:
    """The curves, drawn in other sections, of what this layer's checks judged — a passed check's as well as a
    finding's: a layer judged on metrics the catalog puts in another layer points there rather than saying the
    run logged nothing for it (the first screen's curves aside, as for a finding's links)."""
    read = {m for f in section["findings"] if f["status"] != "skipped" for m in f["metrics"]}
    # a difference of two validation curves (``acc/maj@4/mean − acc/mean@4``) reads each, in its source's chart
    parts = tuple("/" + p for m in read if " − " in m for p in m.split(" − "))
    own = set(section["charts"]) | first
    return [cid for cid, c in page.charts.items() if cid not in own and any(
        k in read or (parts and k.endswith(parts)) for k in [*c["keys"], *c["aliases"]])]


def _efficiency_extra(page: Page, runs: Sequence[tuple[str, Run]]) -> list[str]:
    """Per run, the time of each phase of a step as stacked shares (Plotly normalises to percent)."""
    cids = []
    for rid, run in runs:
        phases = sorted(k for k in run.metrics if _PHASE.fullmatch(k))
        if len(phases) < 2:
            continue
        sub = run.frame.select(["step", *phases]).filter(pl.any_horizontal([pl.col(k).is_not_null() for k in phases]))
        parts = {k: sub[k].fill_null(float("nan")).to_numpy() for k in phases}
        logged = {k: sub[k].is_not_null().to_numpy() for k in phases}  # testing runs every few steps only
        label = f"{page.labels[rid]}: " if len(runs) > 1 else ""
        c = stacked(f"c{len(page.charts)}", sub["step"].to_numpy(), parts, rid, label, page.buckets, logged)
        page.charts[c["id"]] = c
        cids.append(c["id"])
    return cids


def _comparison(page: Page, runs: Sequence[tuple[str, Run]], diagnoses: Sequence[tuple[str, Diagnosis]]
                ) -> dict[str, Any] | None:
    """Several runs side by side: every layer's verdict per run, and the step-aligned per-token
    timings and throughput (per token, so a PPO run with a critic and a GRPO run compare fairly)."""
    if len(runs) < 2:
        return None
    keys = sorted({k for _, run in runs for k in run.metrics if k.startswith(COMPARE)})
    table = [{"run": rid, "label": page.labels[rid], "verdict": d.verdict, "layers": dict(d.layers),
              "algorithm": d.run.algorithm_label, "framework": d.run.framework} for rid, d in diagnoses]
    return {"runs": table, "charts": _line_charts(page, runs, keys),
            "per_token": any(k.startswith("timing_per_token_ms/") for k in keys),
            "table": comparison_table(runs, load_views(), load_catalog())}  # final/best values, config diff


def answer_charts(runs: Sequence[dict[str, Any]], findings: Sequence[dict[str, Any]],
                  limit: int = ANSWER_CHARTS) -> list[str]:
    """The curves drawn with the answer, right under the story: the charts of each warn and fail finding, in
    the story's order (the root cause, what it explains, the other causes, the rest of the timeline), the runs
    taken in turn; at most ``limit``, each once. A note's curves stay in its layer's section.

    Example:
        >>> story = {"causes": [{"finding": "r0-f1", "explains": [{"finding": "r0-f0"}]}], "timeline": []}
        >>> answer_charts([{"story": story}], [{"id": "r0-f0", "status": "warn", "charts": ["c7", "c3"]},
        ...                                    {"id": "r0-f1", "status": "fail", "charts": ["c3"]}])
        ['c3', 'c7']
    """
    by_id = {f["id"]: f for f in findings}
    per_run = []
    for r in runs:
        story = r["story"]
        order = [fid for c in story["causes"] for fid in (c["finding"], *(m["finding"] for m in c["explains"]))]
        order += [m["finding"] for m in story["timeline"]]
        per_run.append([cid for fid in dict.fromkeys(order) if fid in by_id and by_id[fid]["status"] in ACT
                        for cid in by_id[fid]["charts"]])
    turns = [cids[i] for i in range(max(map(len, per_run), default=0)) for cids in per_run if i < len(cids)]
    return list(dict.fromkeys(turns))[:limit]


def cards(findings: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The findings of a section as cards: the fails, warns and notes of one check in one run share a
    card (a check judging each validation source finds once per source), in the order of their first.

    Example:
        >>> [[f["id"] for f in c] for c in cards([{"id": "a", "run": "r0", "check": "val", "status": "warn"},
        ...     {"id": "b", "run": "r0", "check": "kl", "status": "fail"},
        ...     {"id": "c", "run": "r0", "check": "val", "status": "warn"}])]
        [['a', 'c'], ['b']]
    """
    grouped: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for f in findings:
        if f["status"] in FINDING_STATUSES:
            grouped.setdefault((f["run"], f["check"], f["status"]), []).append(f)
    return list(grouped.values())


def _glossary(keys: set[str], catalog: Catalog) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The catalog's words for every key the page shows, one entry per catalog entry (a template entry
    such as ``pass@{k}`` explains all its keys), and ``{key: anchor}``."""
    entries: dict[str, dict[str, Any]] = {}
    anchors: dict[str, str] = {}
    for key in sorted(keys):
        m = catalog.find(key)
        if m is None:
            continue
        anchor = "g-" + re.sub(r"[^A-Za-z0-9]+", "-", m.key).strip("-")
        anchors[key] = anchor
        entry = entries.setdefault(m.key, {
            "anchor": anchor, "entry": m.key, "layer": m.layer, "keys": [],
            "unit": {"en": m.unit, "zh": catalog.unit(m, "zh")} if m.unit else None,
            "en": {"name": m.en.name, "meaning": m.en.meaning, "read": m.en.read},
            "zh": {"name": m.zh.name, "meaning": m.zh.meaning, "read": m.zh.read}})
        entry["keys"].append(key)
    return sorted(entries.values(), key=lambda e: (READING_ORDER.index(e["layer"])
                                                   if e["layer"] in READING_ORDER else 99, e["entry"])), anchors


def _check_inputs(runs: Sequence[Run], diagnoses: Sequence[Diagnosis], buckets: int) -> None:
    if not runs:
        raise RlvitalsError(Words("report: no run given; pass at least one Run (rlvitals.load(path)) and its "
                                  "diagnosis",
                                  "report：没有给出运行；请至少传入一个 Run（rlvitals.load(path)）及其诊断"))
    if len(runs) != len(diagnoses):
        raise RlvitalsError(Words(f"report: {len(runs)} runs but {len(diagnoses)} diagnoses; "
                                  "give one diagnosis per run, in the same order",
                                  f"report：{len(runs)} 个运行，却有 {len(diagnoses)} 个诊断；"
                                  "请每个运行给一个诊断，顺序相同"))
    for run, d in zip(runs, diagnoses, strict=True):
        if d.run is not run and d.path != run.path:
            raise RlvitalsError(Words(f"report: the diagnosis of {d.path!r} is paired with the run {run.path!r}; "
                                      "give the diagnoses in the order of the runs",
                                      f"report：{d.path!r} 的诊断被配给了运行 {run.path!r}；请按运行的顺序给出诊断"))
    if buckets < 1:
        raise RlvitalsError(Words(f"report: buckets={buckets}; expected at least 1 (about one per pixel column)",
                                  f"report：buckets={buckets}；至少应为 1（大约每列像素一个）"))


def _sections(page: Page, runs: list[tuple[str, Run]], diagnoses: list[tuple[str, Diagnosis]],
              catalog: Catalog, progress: Progress | None = None) -> list[dict[str, Any]]:
    """One section per layer, in reading order; ``progress`` is told ``("charts", sections drawn, of
    how many)``, the first screen (drawn before) counted as the first."""
    per_run = [_layer_keys(run, catalog) for _, run in runs]
    validation = _validation_charts(page, runs)
    val_keys = {k for v in validation for k in page.charts[v["chart"]]["keys"]}
    sections = []
    for done, layer in enumerate(READING_ORDER, start=1):
        if progress is not None:
            progress("charts", done, len(READING_ORDER) + 1)
        # σ_G's bands are stacked in the section's σ_G view (report/sigma.py), not drawn as lines
        keys = list(dict.fromkeys(k for keys in per_run for k in keys[layer] if k not in val_keys
                                  and k not in BAND_KEYS))
        charts = _efficiency_extra(page, runs) if layer == "efficiency" else []
        charts += _line_charts(page, runs, keys)
        en, zh = LAYER_NAMES[layer]
        short = catalog.layers[layer]
        sections.append({"id": layer, "name": {"en": en, "zh": zh}, "charts": charts,
                         "short": {"en": short.short_en, "zh": short.short_zh},
                         "validation": validation if layer == "L5" else [],
                         "verdicts": [{"run": rid, "status": d.layers[layer]} for rid, d in diagnoses]})
    if progress is not None:
        progress("charts", len(READING_ORDER) + 1, len(READING_ORDER) + 1)
    return sections


def _pair_rollouts(runs: Sequence[Run], rollouts: RolloutAnalysis | Sequence[RolloutAnalysis | None] | None
                   ) -> list[RolloutAnalysis | None]:
    """One rollout analysis (or None) per run: the rollouts of one run are not any other run's."""
    if rollouts is None:
        return [None] * len(runs)
    if isinstance(rollouts, Sequence):
        if len(rollouts) != len(runs):
            raise RlvitalsError(Words(f"report: {len(runs)} runs but {len(rollouts)} rollout analyses; give one per "
                                      "run, in the order of the runs (None for a run without rollouts)",
                                      f"report：{len(runs)} 个运行，却有 {len(rollouts)} 份 rollout 分析；请每个运行"
                                      "给一份，按运行的顺序（没有 rollout 的运行给 None）"))
        return list(rollouts)
    if len(runs) > 1:
        raise RlvitalsError(Words(f"report: one rollout analysis for {len(runs)} runs would show one run's rollouts "
                                  "as every run's; give a list, one per run in the order of the runs (None for a "
                                  "run without rollouts)",
                                  f"report：{len(runs)} 个运行只给一份 rollout 分析，会把一个运行的 rollout 当成"
                                  "每个运行的；请给一个列表，每个运行一份，按运行的顺序（没有 rollout 的运行给 None）"))
    return [rollouts]


def _joined(run: Run, analysis: RolloutAnalysis | None) -> tuple[Run, set[str]]:
    """``run`` with its rollouts' per-step series (joined here unless the caller did), and their keys."""
    if analysis is None:
        return run, set()
    keys = {c for c in analysis.series().columns if c != "step"}
    return (run if keys <= set(run.metrics) else analysis.join(run)), keys


def _rollouts(page: Page, sections: Sequence[dict[str, Any]], joined: Sequence[tuple[Run, set[str]]],
              with_texts: Sequence[tuple[str, RolloutAnalysis]], found: Sequence[tuple[str, str, Finding]],
              progress: Progress | None) -> dict[str, Any] | None:
    """The rollout section (None without rollouts), linking the charts drawn from the rollouts' keys, with the
    groups the findings link to (a spike's extreme rollouts) kept at their steps."""
    if not with_texts:
        return None
    derived = set().union(*(keys for _, keys in joined))
    from_rollouts = [cid for s in sections for cid in s["charts"] if derived & set(page.charts[cid]["keys"])]
    linked: dict[str, dict[int, list[str]]] = {}
    for _, rid, f in found:
        for r in f.evidence.get("spike_rollouts", ()):  # type: ignore[attr-defined]
            linked.setdefault(rid, {}).setdefault(int(r["step"]), []).append(str(r["group"]))
    return rollout_section(with_texts, _onsets(found), from_rollouts, progress=progress, linked=linked)


def _onsets(found: Sequence[tuple[str, str, Finding]]) -> dict[str, list[int]]:
    """Per run, the steps whose rollouts the page keeps: each finding's onset (a note's advice reads
    them too) and, for a point event, each of its first steps, not only the first."""
    onsets: dict[str, list[int]] = {}
    for _, rid, f in found:
        if f.status in FINDING_STATUSES and f.onset_step is not None:
            onsets.setdefault(rid, []).extend(dict.fromkeys([f.onset_step, *sorted(set(f.points))[:8]]))
    return onsets


def build_page(runs: Sequence[Run], diagnoses: Sequence[Diagnosis],
               rollouts: RolloutAnalysis | Sequence[RolloutAnalysis | None] | None = None,
               *, buckets: int = BUCKETS, lang: str = "en", labels: Sequence[str] | None = None,
               progress: Progress | None = None) -> dict[str, Any]:
    """The page model of a report on ``runs`` (with their ``diagnoses``, same order) and optional
    rollouts (one analysis for one run, or one per run, None for a run without): a JSON-able dict of
    runs, sections in reading order, charts, findings, rollouts and glossary. The rollouts' per-step
    series are drawn in the sections of their layers, as the run's own curves. ``labels`` name the
    runs (default :func:`unique_labels` of their paths). ``progress(phase, done, total)`` hears how far the
    build got: ``"charts"`` (the first screen, then each section), ``"rollouts"`` (the steps kept).

    Example:
        >>> from rlvitals.diagnosis import diagnose
        >>> from rlvitals.synthetic.pathologies import Spec, scenario
        >>> from rlvitals.synthetic.scenarios import run_from_series
        >>> run = run_from_series(scenario(Spec(steps=200, seed=1, pathology="entropy_collapse", at=120)))
        >>> page = build_page([run], [diagnose(run)])
        >>> [s["id"] for s in page["sections"]][:4]
        ['L5', 'L1', 'efficiency', 'L2']
    """
    _check_inputs(runs, diagnoses, buckets)
    analyses = _pair_rollouts(runs, rollouts)
    # a spike finding names the extreme rollouts of its steps, which the browser then shows
    diagnoses = [d if a is None else with_rollouts(d, a) for d, a in zip(diagnoses, analyses, strict=True)]
    catalog = load_catalog()
    page = Page(buckets, labels={f"r{i}": label for i, label in enumerate(_labels(runs, labels))})
    joined = [_joined(run, a) for run, a in zip(runs, analyses, strict=True)]
    pairs = [(f"r{i}", run) for i, (run, _) in enumerate(joined)]
    dpairs = [(f"r{i}", d) for i, d in enumerate(diagnoses)]
    views = load_views()
    if progress is not None:
        progress("charts", 0, len(READING_ORDER) + 1)
    overview = first_look(page, pairs, views)
    sections = _sections(page, pairs, dpairs, catalog, progress)
    _views(page, sections, pairs, dpairs)
    found = _findings(dpairs)
    with_texts = [(f"r{i}", a) for i, a in enumerate(analyses) if a is not None]
    rollout = _rollouts(page, sections, joined, with_texts, found, progress)
    comparison = _comparison(page, pairs, dpairs)
    where = add_markers(page.charts, found)
    first = set(overview["charts"])  # marked too, but a finding links to its layer's charts, in full
    where = {fid: [c for c in cids if c not in first] for fid, cids in where.items()}
    available = {rid: available_steps(a) for rid, a in with_texts}
    findings = [_finding_json(fid, rid, f, where.get(fid, []),
                              nearest(available.get(rid, []), f.onset_step) if f.onset_step is not None else None,
                              page)
                for fid, rid, f in found]
    _fill(sections, findings, page, first)
    runs_json = _runs_json(dpairs, page, catalog, found)
    shown = {k for c in page.charts.values() for k in c["keys"]} | {m for f in findings for m in f["metrics"]}
    glossary, anchors = _glossary(shown, catalog)
    for c in page.charts.values():  # a finding's name for a validation curve links where the curve's key does
        anchors.update({alias: anchors[key] for alias, key in c["aliases"].items() if key in anchors})
    return {"meta": {"generator": f"rlvitals {__version__}", "lang": lang, "buckets": buckets,
                     "reading_order": list(READING_ORDER)},
            "runs": runs_json, "sections": sections, "answer": {"charts": answer_charts(runs_json, findings)},
            "charts": page.charts, "rollouts": rollout, "comparison": comparison, "glossary": glossary,
            "anchors": anchors, "overview": overview,
            "clocks": {rid: ck for rid, run in pairs if (ck := clock(run, views)) is not None},
            "tokens": token_axes(pairs, views)}  # the x axis of tokens trained on, where a run counts them


def _views(page: Page, sections: list[dict[str, Any]], pairs: Sequence[tuple[str, Run]],
           dpairs: Sequence[tuple[str, Diagnosis]]) -> None:
    """The sections' own views: where the run tops out (with "did the model get better", L5) and σ_G across
    the groups (with "does the data still teach", L3)."""
    forecast, sigma = forecast_section(page, dpairs), sigma_section(page, pairs)
    for section in sections:
        section["forecast"] = forecast if section["id"] == "L5" else []
        section["sigma"] = sigma if section["id"] == "L3" else []


def _labels(runs: Sequence[Run], labels: Sequence[str] | None) -> list[str]:
    """One label per run: those given, else the shortest distinguishing paths."""
    names = list(labels) if labels is not None else unique_labels([r.path for r in runs])
    if len(names) != len(runs):
        raise RlvitalsError(Words(f"report: {len(runs)} runs but {len(names)} labels; give one label per run",
                                  f"report：{len(runs)} 个运行，却有 {len(names)} 个标签；请每个运行给一个标签"))
    return names


def _runs_json(dpairs: Sequence[tuple[str, Diagnosis]], page: Page, catalog: Catalog,
               found: Sequence[tuple[str, str, Finding]]) -> list[dict[str, Any]]:
    """The runs table's rows, each with the story its diagnosis tells (what the page opens with)."""
    return [_run_json(rid, d, page.labels[rid], catalog) | {"story": story_json(rid, d, found)} for rid, d in dpairs]


def _run_json(rid: str, d: Diagnosis, label: str, catalog: Catalog) -> dict[str, Any]:
    """A row of the runs table: ``algorithm`` is the detected algorithm's description, ``algorithm_short``
    its name in the column (the catalog's ``short``); ``notes`` the readers' notes in English and
    ``notes_zh`` the same notes in Chinese (a note not translated stays English), which the page shows
    in the language chosen in the browser."""
    run = d.run
    return {"id": rid, "path": run.path, "label": label, "framework": run.framework,
            "algorithm": run.algorithm_label,
            "algorithm_short": catalog.algorithm_short(run.algorithm) or run.algorithm_label,
            "steps": int(len(run.train_steps)), "metrics": len(run.metrics), "verdict": d.verdict,
            "notes": [str(n) for n in run.notes], "notes_zh": [in_lang(n, "zh") for n in run.notes]}
