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
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from .. import __version__
from ..catalog import Catalog, load_catalog
from ..diagnosis import LAYER_NAMES, READING_ORDER, Diagnosis, Finding
from ..errors import RlvitalsError
from ..run import Run
from .charts import Page, add_markers, stacked, trace
from .rollouts import nearest, rollout_section

if TYPE_CHECKING:
    from ..rollout.analysis import RolloutAnalysis

BUCKETS = 400  # about one bucket per two pixels of a full-width chart: at most 1600 points a line
_STATS = ("min", "max", "mean", "std", "balanced_min", "balanced_max", "minmax_diff")
_PHASE = re.compile(r"timing_s/(?!step$)[^/]+")  # one phase of a step; timing_s/step is their total
COMPARE = ("timing_per_token_ms/", "perf/throughput", "perf/time_per_step", "timing_s/step")


def _stem(key: str) -> str:
    """Keys differing only in their statistic (``…/min``, ``…/max``, ``…/mean``) share a chart."""
    head, _, last = key.rpartition("/")
    return head if head and last in _STATS else key


def _label(run: Run) -> str:
    return Path(run.path).name or run.path


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
                    name = f"{_label(run)}: {key}" if many else key
                    traces.append(trace(name, rid, key, x, y, page.buckets))
        if traces:
            cids.append(page.add(members, traces))
    return cids


def _validation_charts(page: Page, runs: Sequence[tuple[str, Run]]) -> list[dict[str, Any]]:
    """One chart per validation data source, a line per (run, variable/statistic)."""
    sources: dict[str, list[tuple[str, Run, str, str]]] = {}
    for rid, run in runs:
        for source, frame in run.validation.items():
            for label in frame.columns[1:]:
                sources.setdefault(source, []).append((rid, run, label, _val_key(run, source, label)))
    out = []
    for source, members in sources.items():
        traces = []
        for rid, run, label, key in members:
            frame = run.validation[source].drop_nulls(label)
            x, y = frame["step"].to_numpy(), frame[label].cast(float).to_numpy()
            name = f"{_label(run)}: {label}" if len(runs) > 1 else label
            traces.append(trace(name, rid, key, x, y, page.buckets))
        cid = page.add([m[3] for m in members], traces, title={"en": source, "zh": source})
        out.append({"source": source, "chart": cid})
    return out


def _val_key(run: Run, source: str, label: str) -> str:
    """The canonical key behind a validation column (Run.validation names columns by variable/statistic
    within their source): the run's key that ends with ``source/label`` (or is ``eval/label``)."""
    for key in run.metrics:
        if key in (label, f"eval/{label}") or key.endswith(f"{source}/{label}"):
            return key
    return label


def _layer_keys(run: Run, catalog: Catalog, skip: set[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {layer: [] for layer in READING_ORDER}
    for key in run.metrics:
        entry = catalog.find(key)
        logged = run.frame[key].null_count() < run.frame.height
        if entry is not None and entry.layer in out and key not in skip and logged:
            out[entry.layer].append(key)
    return out


def _findings(diagnoses: Sequence[tuple[str, Diagnosis]]) -> list[tuple[str, str, Finding]]:
    return [(f"{rid}-f{i}", rid, f) for rid, d in diagnoses for i, f in enumerate(d.findings)]


def _finding_json(fid: str, rid: str, f: Finding, charts: list[str], rollout_step: int | None) -> dict[str, Any]:
    return {"id": fid, "run": rid, "check": f.check, "layer": f.layer, "status": f.status, "title": dict(f.title),
            "message": dict(f.message), "advice": dict(f.advice), "metrics": list(f.metrics),
            "onset": f.onset_step, "span": list(f.span) if f.span else None,
            "evidence": [[k, _evidence(v)] for k, v in f.evidence.items()], "charts": charts,
            "rollout_step": rollout_step}


def _evidence(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)) and len(value) > 12:
        return ", ".join(map(str, value[:12])) + f" … ({len(value)})"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def _efficiency_extra(page: Page, runs: Sequence[tuple[str, Run]]) -> list[str]:
    """Per run, the time of each phase of a step as stacked shares (Plotly normalises to percent)."""
    cids = []
    for rid, run in runs:
        phases = sorted(k for k in run.metrics if _PHASE.fullmatch(k))
        if len(phases) < 2:
            continue
        sub = run.frame.select(["step", *phases]).filter(pl.any_horizontal([pl.col(k).is_not_null() for k in phases]))
        parts = {k: sub[k].fill_null(float("nan")).to_numpy() for k in phases}
        label = f"{_label(run)}: " if len(runs) > 1 else ""
        c = stacked(f"c{len(page.charts)}", sub["step"].to_numpy(), parts, rid, label, page.buckets)
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
    table = [{"run": rid, "label": _label(d.run), "verdict": d.verdict, "layers": dict(d.layers),
              "algorithm": d.run.algorithm_label, "framework": d.run.framework} for rid, d in diagnoses]
    return {"runs": table, "charts": _line_charts(page, runs, keys),
            "per_token": any(k.startswith("timing_per_token_ms/") for k in keys)}


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
            "anchor": anchor, "entry": m.key, "layer": m.layer, "unit": m.unit, "keys": [],
            "en": {"name": m.en.name, "meaning": m.en.meaning, "read": m.en.read},
            "zh": {"name": m.zh.name, "meaning": m.zh.meaning, "read": m.zh.read}})
        entry["keys"].append(key)
    return sorted(entries.values(), key=lambda e: (READING_ORDER.index(e["layer"])
                                                   if e["layer"] in READING_ORDER else 99, e["entry"])), anchors


def _check_inputs(runs: Sequence[Run], diagnoses: Sequence[Diagnosis], buckets: int) -> None:
    if not runs:
        raise RlvitalsError("report: no run given; pass at least one Run (rlvitals.load(path)) and its diagnosis")
    if len(runs) != len(diagnoses):
        raise RlvitalsError(f"report: {len(runs)} runs but {len(diagnoses)} diagnoses; "
                            "give one diagnosis per run, in the same order")
    for run, d in zip(runs, diagnoses, strict=True):
        if d.run is not run and d.path != run.path:
            raise RlvitalsError(f"report: the diagnosis of {d.path!r} is paired with the run {run.path!r}; "
                                "give the diagnoses in the order of the runs")
    if buckets < 1:
        raise RlvitalsError(f"report: buckets={buckets}; expected at least 1 (about one per pixel column)")


def _sections(page: Page, runs: list[tuple[str, Run]], diagnoses: list[tuple[str, Diagnosis]],
              skip: set[str], catalog: Catalog) -> list[dict[str, Any]]:
    per_run = [_layer_keys(run, catalog, skip) for _, run in runs]
    validation = _validation_charts(page, runs)
    val_keys = {k for v in validation for k in page.charts[v["chart"]]["keys"]}
    sections = []
    for layer in READING_ORDER:
        keys = list(dict.fromkeys(k for keys in per_run for k in keys[layer] if k not in val_keys))
        charts = _efficiency_extra(page, runs) if layer == "efficiency" else []
        charts += _line_charts(page, runs, keys)
        en, zh = LAYER_NAMES[layer]
        sections.append({"id": layer, "name": {"en": en, "zh": zh}, "charts": charts,
                         "validation": validation if layer == "L5" else [],
                         "verdicts": [{"run": rid, "status": d.layers[layer]} for rid, d in diagnoses]})
    return sections


def build_page(runs: Sequence[Run], diagnoses: Sequence[Diagnosis], rollouts: RolloutAnalysis | None = None,
               *, buckets: int = BUCKETS, lang: str = "en") -> dict[str, Any]:
    """The page model of a report on ``runs`` (with their ``diagnoses``, same order) and optional
    rollouts: a JSON-able dict of runs, sections in reading order, charts, findings, rollouts and glossary.

    Example:
        >>> from rlvitals.diagnosis import diagnose
        >>> from rlvitals.pathologies import Spec, scenario
        >>> from rlvitals.scenarios import run_from_series
        >>> run = run_from_series(scenario(Spec(steps=200, seed=1, pathology="entropy_collapse", at=120)))
        >>> page = build_page([run], [diagnose(run)])
        >>> [s["id"] for s in page["sections"]][:4]
        ['L5', 'L1', 'efficiency', 'L2']
    """
    _check_inputs(runs, diagnoses, buckets)
    catalog = load_catalog()
    page = Page(buckets)
    pairs = [(f"r{i}", run) for i, run in enumerate(runs)]
    dpairs = [(f"r{i}", d) for i, d in enumerate(diagnoses)]
    derived = {c for c in rollouts.steps.columns if c != "step"} if rollouts is not None else set()
    sections = _sections(page, pairs, dpairs, derived, catalog)
    found = _findings(dpairs)
    onsets = [f.onset_step for _, _, f in found if f.status in ("warn", "fail") and f.onset_step is not None]
    rollout = rollout_section(page, rollouts, onsets, catalog) if rollouts is not None else None
    comparison = _comparison(page, pairs, dpairs)
    where = add_markers(page.charts, found)
    available = rollout["available"] if rollout else []
    findings = [_finding_json(fid, rid, f, where.get(fid, []),
                              nearest(available, f.onset_step) if f.onset_step is not None else None)
                for fid, rid, f in found]
    for section in sections:
        section["findings"] = [f for f in findings if f["layer"] == section["id"]]
    shown = {k for c in page.charts.values() for k in c["keys"]} | {m for f in findings for m in f["metrics"]}
    glossary, anchors = _glossary(shown, catalog)
    return {"meta": {"generator": f"rlvitals {__version__}", "lang": lang, "buckets": buckets,
                     "reading_order": list(READING_ORDER)},
            "runs": [_run_json(rid, d) for rid, d in dpairs], "sections": sections, "charts": page.charts,
            "rollouts": rollout, "comparison": comparison, "glossary": glossary, "anchors": anchors}


def _run_json(rid: str, d: Diagnosis) -> dict[str, Any]:
    run = d.run
    return {"id": rid, "path": run.path, "label": _label(run), "framework": run.framework,
            "algorithm": run.algorithm_label, "steps": int(len(run.train_steps)), "metrics": len(run.metrics),
            "verdict": d.verdict, "notes": list(run.notes)}
