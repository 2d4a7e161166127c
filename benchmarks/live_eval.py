"""How ``rlvitals watch`` does live on the corpus of real runs (benchmarks/corpus/): every run is written
into a file again as it could have been written while it trained (``live_replay.py``: line by line, in
stdout bursts, rewritten at checkpoints, record by record), and watched as it grows by the real watcher
(``open_watcher``, no sink)
under an injected clock that moves a minute per look (so every look that finds the log grown is diagnosed in
full; on a long run the tail pass goes first in the same look), and then one cooldown more with nothing new
(the trainer stopped; the watcher goes on looking). Then, against the final diagnosis of the whole file
(``load`` + ``diagnose``, as ``corpus_eval.py``):

- **contradicted alerts**: an alert raised live (kind new, escalated or again; warn or fail) whose check —
  or a check of one of its families (corpus/families.toml) — the final diagnosis does not hold at that status
  or worse, and that either still stood at the end of the watch or was a ``fail`` (which ``--exit-on fail``
  acts on at once). Goal 0. A cause escalated by what followed it (``evidence.escalated_by``) is held when the
  final diagnosis holds the cause at its own status and what followed at the alert's. The findings an alert
  carries as its consequences are scored the same way, apart; one whose cause was withdrawn is withdrawn with it
  (the watcher says no more of what rode under a cleared cause), a withdrawn warning below.
- **withdrawn warnings**: the other warnings the final diagnosis does not hold — the watcher withdrew them with
  a ``cleared`` alert before the end: told, and taken back in words. The price of warning early.
- **withdrawn**: alerts of kind ``cleared`` (a finding that stopped holding), counted when the watcher says so.
- **changed steps**: a step the watcher's run showed (the Run it diagnosed, at each look) that is not where
  the final run has it: the step axis shown is not a prefix of the final one (a step renumbered, dropped),
  or a value shown at a step differs from the final value there. **Backward**: a look whose step axis does
  not extend the previous look's. **Final mismatch**: the watcher's last run differs from the final one.
  Goal 0 for all three. Steps the reader marked as an estimate (``Run.estimated_steps``: a TRL console whose
  buffered bar ran ahead of its dicts) are counted apart (**estimated**): they are shown as estimated, and
  nothing is alerted on them until their numbering held over three looks (rlvitals.live.estimates).
- **onset drift**: for each alert, |its onset − the onset of the same finding (check and metrics, else
  check) in the final diagnosis|.
- **lead time**: on the runs whose label has a ``[damage]`` step (corpus/README.md; written by
  corpus/label_damage.py from the raw numbers), damage step − the step at which the first alert of each family
  the label names fired (positive: before the damage), by family; from the primary replay of each run (not
  the bursts, whose files differ from the run's own).

    python benchmarks/live_eval.py                 # the tables
    python benchmarks/live_eval.py --json          # the figures and every listed case
    python benchmarks/live_eval.py --only trlconsole__hotpotqa --modes burst-4k
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus_eval import ALARM, CORPUS, RANK, labelled_runs, load_families, resolve_input, tomllib  # noqa: E402
from live_replay import NOT_REPLAYED, Plan, plan  # noqa: E402

RAISED = ("new", "escalated", "again")
PRIMARY = ("lines", "checkpoints", "records", "blocks")
MINUTE = 60.0
CORPUS_RUNS = CORPUS / "runs"


@dataclass(frozen=True)
class Shown:
    """One run the watcher diagnosed in full, at one look."""

    look: int
    path: str
    steps: tuple[int, ...]
    frame: Any  # polars.DataFrame
    #: the reader said these steps are an estimate (``Run.estimated_steps``): shown as such, alerted on only
    #: once their numbering held (rlvitals.live.estimates)
    estimated: bool = False


@dataclass
class Replayed:
    """One replay of one run and what came of it."""

    run_id: str
    mode: str
    label: dict[str, Any]
    looks: int = 0
    alerts: list[Any] = field(default_factory=list)
    shown: list[Shown] = field(default_factory=list)
    final: dict[str, Any] = field(default_factory=dict)  # run path -> Run (the whole file, loaded)
    diagnoses: dict[str, Any] = field(default_factory=dict)  # run path -> Diagnosis
    error: str = ""
    seconds: float = 0.0

    def final_of(self, path: str) -> tuple[Any, Any] | None:
        """The final run and diagnosis of the run the watcher called ``path`` (the first one otherwise)."""
        key = path if path in self.final else next(iter(self.final), None)
        return None if key is None else (self.final[key], self.diagnoses[key])


def targets_of(label: dict[str, Any]) -> list[int]:
    """The labelled steps looked at densely: the headline's onset window and the damage step."""
    out = [int(s) for s in label.get("headline", {}).get("onset", [])]
    if "damage" in label:
        out.append(int(label["damage"]["step"]))
    return sorted(set(out))


def watch(run_id: str, label: dict[str, Any], p: Plan, folder: Path) -> Replayed:
    """Replay ``p`` into ``folder`` under the watcher, then load and diagnose the whole file."""
    import rlvitals
    from rlvitals.watch import Confirm, WatchOptions, open_watcher

    out = Replayed(run_id, p.mode, label)
    now = [1_000_000.0]
    target = folder / p.target
    started = time.perf_counter()
    options = WatchOptions(confirm=Confirm())  # as `rlvitals watch` decides (--confirm-looks 2)
    w = open_watcher([target], [], folder / "watch.sqlite", options, out=io.StringIO(), err=io.StringIO(),
                     clock=lambda: now[0], sleep=lambda s: None)
    last: dict[str, Any] = {}
    try:
        for _ in p.write(folder):
            out.looks += 1
            now[0] += MINUTE
            out.alerts += w.cycle()
            out.shown += _diagnosed(w, last, out.looks)
        now[0] += MINUTE
        out.alerts += w.cycle(force=True)
        out.shown += _diagnosed(w, last, out.looks + 1)
        # the trainer stopped; the watcher goes on looking through one cooldown (a finding that went away is
        # said cleared only once it stayed away that long)
        for i in range(int(options.cooldown.seconds // MINUTE) + 1):
            now[0] += MINUTE
            out.alerts += w.cycle()
            out.shown += _diagnosed(w, last, out.looks + 2 + i)
    except Exception as exc:  # noqa: BLE001 - a watcher that fails on a replay is what this reports
        out.error = f"watch: {type(exc).__name__}: {exc}"
    finally:
        w.close()
    try:
        for run in rlvitals.load(target):
            out.final[run.path] = run
            out.diagnoses[run.path] = rlvitals.diagnose(run)
    except Exception as exc:  # noqa: BLE001
        out.error = out.error or f"load: {type(exc).__name__}: {exc}"
    out.seconds = time.perf_counter() - started
    return out


def _diagnosed(w: Any, last: dict[str, Any], look: int) -> list[Shown]:
    """The runs the watcher diagnosed in full since the last look: its ``full`` diagnoses that are new (a
    watcher without them: the runs its follows hold now, when their steps changed)."""
    full = getattr(w, "full", None)
    runs = {p: d.run for p, d in full.items()} if full is not None else \
        {r.path: r for f in w.follows for r in f.runs()}
    shown = []
    for path, run in runs.items():
        if last.get(path) is not run:
            last[path] = run
            shown.append(Shown(look, path, tuple(int(s) for s in run.steps), run.frame,
                               bool(getattr(run, "estimated_steps", False))))
    return shown


# -- scoring ----------------------------------------------------------------------------------------------


def related(families: dict[str, tuple[str, ...]]) -> dict[str, set[str]]:
    """check -> the checks that hold it: itself and every check of a family it is in."""
    out: dict[str, set[str]] = {}
    for checks in families.values():
        for c in checks:
            out.setdefault(c, {c}).update(checks)
    return out


def _holds(d: Any, checks: set[str], status: str) -> bool:
    return any(f.check in checks and RANK.get(f.status, -1) >= RANK[status] for f in d.findings)


def _held(d: Any, a: Any, rel: dict[str, set[str]]) -> bool:
    """Whether the final diagnosis ``d`` holds alert ``a``: its check (or one of its families) at its status or
    worse; a cause raised by what followed it (``escalated_by``) at its own status, with that finding at the
    alert's status."""
    by = a.evidence.get("escalated_by")
    if by is None:
        return _holds(d, rel.get(a.check, {a.check}), a.status)
    return _holds(d, rel.get(a.check, {a.check}), a.evidence["own_status"]) and \
        _holds(d, rel.get(by["check"], {by["check"]}), a.status)


def _withdrawn(r: Replayed, a: Any) -> bool:
    """Whether the watcher withdrew ``a`` (a ``cleared`` alert of its key came later, and nothing raised it
    again after that)."""
    later = [b for b in r.alerts[r.alerts.index(a) + 1:] if b.key == a.key]
    return bool(later) and later[-1].kind == "cleared"


def contradicted(r: Replayed, rel: dict[str, set[str]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                                  list[dict[str, Any]]]:
    """The alerts the final diagnosis does not hold that stood at the end of the watch or failed the run (a
    ``--exit-on fail`` may have stopped it), the consequences it does not hold, and the warnings it does not hold
    that the watcher withdrew (``cleared``) before the end."""
    alerts, consequences, withdrawn = [], [], []
    for a in r.alerts:
        if a.kind not in RAISED or a.status not in ALARM:
            continue
        found = r.final_of(a.run)
        if found is None:
            continue
        d = found[1]
        if not _held(d, a, rel):
            final = [f.status for f in d.findings if f.check == a.check]
            case = {"run": r.run_id, "mode": r.mode, "check": a.check, "status": a.status, "kind": a.kind,
                    "step": a.step, "onset": a.onset_step, "final": max(final, key=RANK.get, default="absent")}
            (withdrawn if a.status != "fail" and _withdrawn(r, a) else alerts).append(case)
        for c in a.consequences:
            if c["status"] in ALARM and not _holds(d, rel.get(c["check"], {c["check"]}), c["status"]):
                case = {"run": r.run_id, "mode": r.mode, "check": c["check"], "status": c["status"], "step": c["step"],
                        "under": a.check, "alert_step": a.step, "kind": f"under {a.check}", "onset": c["step"],
                        "final": max([f.status for f in d.findings if f.check == c["check"]], key=RANK.get,
                                     default="absent")}
                # what rode under a cause is withdrawn with it (rlvitals.live.alerts): scored as the cause is
                (withdrawn if c["status"] != "fail" and _withdrawn(r, a) else consequences).append(case)
    return alerts, consequences, withdrawn


def _prefix(shown: Sequence[int], final: Sequence[int]) -> int:
    n = min(len(shown), len(final))
    for i in range(n):
        if shown[i] != final[i]:
            return i
    return n


def _changed_values(s: Shown, run: Any, upto: int) -> list[int]:
    """The steps among the first ``upto`` shown (the same steps as the final run's first ``upto``) at which a
    value shown differs from the final value (a value not shown yet is no change)."""
    bad = np.zeros(upto, dtype=bool)
    for col in (set(s.frame.columns) & set(run.frame.columns)) - {"step"}:
        shown, final = s.frame[col].head(upto), run.frame[col].head(upto)
        a, b = shown.fill_null(np.nan).to_numpy(), final.fill_null(np.nan).to_numpy()
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        bad |= ~shown.is_null().to_numpy() & ~same
    return [int(x) for x in np.asarray(s.steps[:upto])[bad]]


def step_changes(r: Replayed) -> dict[str, list[dict[str, Any]]]:
    """Steps shown that later changed (renumbered or dropped: ``steps``; another value: ``values``), looks that
    went back on the previous one (``backward``), and a last look that is not the final run (``final``)."""
    out: dict[str, list[dict[str, Any]]] = {"steps": [], "values": [], "backward": [], "final": [],
                                            "estimated": []}
    before: dict[str, Shown] = {}
    for s in r.shown:
        found = r.final_of(s.path)
        if found is None:
            continue
        run = found[0]
        final = [int(x) for x in run.steps]
        keep = _prefix(s.steps, final)
        if keep < len(s.steps):
            out["estimated" if s.estimated else "steps"].append({
                "run": r.run_id, "mode": r.mode, "look": s.look, "shown": list(s.steps[keep:]),
                "final": final[keep:keep + len(s.steps) - keep], "at": keep})
        values = _changed_values(s, run, keep)
        if values:
            out["values"].append({"run": r.run_id, "mode": r.mode, "look": s.look, "steps": values})
        prev = before.get(s.path)
        if prev is not None and _prefix(prev.steps, s.steps) < len(prev.steps) and not prev.estimated:
            out["backward"].append({"run": r.run_id, "mode": r.mode, "look": s.look,
                                    "was": prev.steps[-1] if prev.steps else None,
                                    "now": s.steps[-1] if s.steps else None})
        before[s.path] = s
    for path, s in before.items():
        found = r.final_of(path)
        if found is not None and list(s.steps) != [int(x) for x in found[0].steps]:
            out["final"].append({"run": r.run_id, "mode": r.mode, "shown": len(s.steps), "final": len(found[0].steps)})
    return out


def drifts(r: Replayed) -> list[dict[str, Any]]:
    """|alert onset − final onset of the same finding| for each raised alert that has both."""
    out = []
    for a in r.alerts:
        if a.kind not in RAISED or a.status not in ALARM or a.onset_step is None:
            continue
        found = r.final_of(a.run)
        if found is None:
            continue
        same = [f for f in found[1].findings if f.check == a.check and f.status in ("note", *ALARM)]
        match = next((f for f in same if tuple(f.metrics) == tuple(a.metrics)), same[0] if same else None)
        if match is not None and match.onset_step is not None:
            out.append({"run": r.run_id, "mode": r.mode, "check": a.check, "alert": a.onset_step,
                        "final": match.onset_step, "drift": abs(int(a.onset_step) - int(match.onset_step))})
    return out


def leads(r: Replayed, families: dict[str, tuple[str, ...]]) -> list[dict[str, Any]]:
    """For a run with a damage step: each family its label names, and the step its first alert fired at."""
    damage = r.label.get("damage")
    if damage is None or r.mode not in PRIMARY:
        return []
    head = r.label.get("headline", {})
    named = [head.get("family", "none"), *head.get("consequences", []), *head.get("independent", []),
             *[m["family"] for m in r.label.get("must_find", [])]]
    out = []
    for family in dict.fromkeys(f for f in named if f != "none"):
        checks = set(families.get(family, ()))
        fired = [a.step for a in r.alerts if a.kind in RAISED and a.status in ALARM and a.check in checks]
        first = min(fired) if fired else None
        out.append({"run": r.run_id, "family": family, "damage": int(damage["step"]), "metric": damage["metric"],
                    "alert": first, "lead": None if first is None else int(damage["step"]) - first})
    return out


def _summary(values: Sequence[int]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {"n": len(values), "zero": sum(v == 0 for v in values), "median": statistics.median(values),
            "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], "max": ordered[-1]}


def lead_table(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """By family: damage runs naming it, runs alerted, median and worst lead, runs with no alert before the
    damage; ``any`` takes each run's first alert of any family its label names."""
    table: dict[str, dict[str, Any]] = {}
    by_run: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_run.setdefault(row["run"], []).append(row)
    firsts = []
    for run, mine in by_run.items():
        fired = [r for r in mine if r["alert"] is not None]
        best = min(fired, key=lambda r: r["alert"]) if fired else {**mine[0], "alert": None, "lead": None}
        firsts.append({**best, "run": run, "family": "any"})
    for row in [*rows, *firsts]:
        entry = table.setdefault(row["family"], {"runs": 0, "alerted": 0, "leads": [], "none_before": []})
        entry["runs"] += 1
        if row["lead"] is not None:
            entry["alerted"] += 1
            entry["leads"].append(row["lead"])
        if row["lead"] is None or row["lead"] <= 0:
            entry["none_before"].append(row["run"])
    for entry in table.values():
        leads_ = entry.pop("leads")
        entry["median"] = statistics.median(leads_) if leads_ else None
        entry["worst"] = min(leads_) if leads_ else None
    return dict(sorted(table.items(), key=lambda kv: (kv[0] == "any", kv[0])))


# -- the corpus -------------------------------------------------------------------------------------------


@dataclass
class Scored:
    """What one replay of one run counts (plain data: it crosses processes)."""

    run_id: str
    mode: str
    looks: int
    alerts: int
    withdrawn: int
    cases: dict[str, list[dict[str, Any]]]
    drifts: list[dict[str, Any]]
    leads: list[dict[str, Any]]
    error: str
    seconds: float


def score(r: Replayed, families: dict[str, tuple[str, ...]]) -> Scored:
    bad, cons, taken_back = contradicted(r, related(families))
    cases = {"contradicted": bad, "consequences": cons, "withdrawn_warnings": taken_back, **step_changes(r),
             "errors": [{"run": r.run_id, "mode": r.mode, "error": r.error}] if r.error else []}
    return Scored(r.run_id, r.mode, r.looks, sum(a.kind in RAISED and a.status in ALARM for a in r.alerts),
                  sum(a.kind == "cleared" for a in r.alerts), cases, drifts(r), leads(r, families), r.error,
                  round(r.seconds, 2))


def replay_one(run_id: str, mode: str) -> Scored:
    """Replay the labelled run ``run_id`` in ``mode`` under the watcher, in a folder of its own, and score it."""
    folder = CORPUS_RUNS / run_id
    label = tomllib.loads((folder / "labels.toml").read_text(encoding="utf-8"))
    source = resolve_input(folder, label)
    [p] = [p for p in plan(source, label["run"]["format"], targets_of(label)) if p.mode == mode]
    with tempfile.TemporaryDirectory(prefix="rlvitals-live-") as tmp:
        return score(watch(run_id, label, p, Path(tmp)), load_families())


def tasks(only: str | None = None, modes: Sequence[str] | None = None,
          runs: Sequence[str] | None = None) -> tuple[list[tuple[str, str]], dict[str, list[str]]]:
    """The replays to run, ``(run id, mode)``: every labelled run (or those whose id contains ``only``, or is in
    ``runs``) in each of its modes (or only ``modes``); and the runs not replayed, by format."""
    out: list[tuple[str, str]] = []
    skipped: dict[str, list[str]] = {}
    for run_id, folder, label in labelled_runs():
        if (only and only not in run_id) or (runs is not None and run_id not in runs):
            continue
        source = resolve_input(folder, label)
        fmt = label["run"]["format"]
        if fmt in NOT_REPLAYED:
            skipped.setdefault(fmt, []).append(run_id)
        out += [(run_id, p.mode) for p in plan(source, fmt, ()) if modes is None or p.mode in modes]
    return out, skipped


def run_all(todo: Sequence[tuple[str, str]], jobs: int = 2) -> list[Scored]:
    """Every replay of ``todo``, by ``jobs`` processes (each replay is independent: its own folder and watcher)."""
    if jobs <= 1:
        return [replay_one(run_id, mode) for run_id, mode in todo]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(replay_one, [run_id for run_id, _ in todo], [mode for _, mode in todo]))


def figures(done: Sequence[Scored]) -> dict[str, Any]:
    """The figures by mode and in all, the cases each one counts, and the lead-time table."""
    by_mode: dict[str, dict[str, Any]] = {}
    cases: dict[str, list[dict[str, Any]]] = {}
    drift_rows: list[dict[str, Any]] = []
    lead_rows: list[dict[str, Any]] = []
    for r in done:
        m = by_mode.setdefault(r.mode, {"runs": 0, "looks": 0, "alerts": 0, "contradicted": 0,
                                         "withdrawn_warnings": 0, "consequences": 0,
                                         "withdrawn": 0, "changed_steps": 0, "estimated_steps": 0,
                                         "changed_values": 0, "backward": 0,
                                         "final_mismatch": 0, "errors": 0, "drifts": []})
        m["runs"] += 1
        m["looks"] += r.looks
        m["alerts"] += r.alerts
        m["withdrawn"] += r.withdrawn
        m["contradicted"] += len(r.cases["contradicted"])
        m["withdrawn_warnings"] += len(r.cases["withdrawn_warnings"])
        m["consequences"] += len(r.cases["consequences"])
        m["changed_steps"] += len({s for c in r.cases["steps"] for s in c["shown"]})
        m["estimated_steps"] += len({s for c in r.cases["estimated"] for s in c["shown"]})
        m["changed_values"] += len({s for c in r.cases["values"] for s in c["steps"]})
        m["backward"] += len(r.cases["backward"])
        m["final_mismatch"] += len(r.cases["final"])
        m["errors"] += bool(r.error)
        m["drifts"] += [d["drift"] for d in r.drifts]
        for key, found in r.cases.items():
            cases.setdefault(key, []).extend(found)
        drift_rows += r.drifts
        lead_rows += r.leads
    for m in by_mode.values():
        m["drift"] = _summary(m.pop("drifts"))
    total = {k: sum(m[k] for m in by_mode.values()) for k in next(iter(by_mode.values()), {}) if k != "drift"}
    total["drift"] = _summary([d["drift"] for d in drift_rows])
    worst = sorted(drift_rows, key=lambda d: -d["drift"])[:10]
    slowest = sorted(done, key=lambda r: -r.seconds)[:5]
    return {"modes": by_mode, "total": total, "cases": cases, "worst_drift": worst, "lead_rows": lead_rows,
            "leads": lead_table(lead_rows), "slowest": [[r.run_id, r.mode, r.seconds] for r in slowest],
            "replays": [{"run": r.run_id, "mode": r.mode, "looks": r.looks, "alerts": r.alerts,
                         "seconds": r.seconds} for r in done]}


# -- output -----------------------------------------------------------------------------------------------

COLUMNS = (("runs", "runs"), ("looks", "looks"), ("alerts", "alerts"), ("contradicted", "contra"),
           ("withdrawn_warnings", "wd-warn"), ("consequences", "conseq"), ("withdrawn", "withdr"),
           ("changed_steps", "steps"), ("estimated_steps", "est"), ("changed_values", "values"),
           ("backward", "back"), ("final_mismatch", "final"), ("errors", "errors"))


def _drift(d: dict[str, Any]) -> str:
    if not d["n"]:
        return "-"
    return f"{d['n']} ({d['zero']} exact), median {d['median']:g}, p90 {d['p90']}, max {d['max']}"


def _steps(values: Sequence[int], most: int = 6) -> str:
    return ", ".join(map(str, values[:most])) + (f", … ({len(values)})" if len(values) > most else "")


def _grouped(cases: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in cases:
        out.setdefault((c["run"], c["mode"]), []).append(c)
    return out


def render(fig: dict[str, Any], skipped: dict[str, list[str]], seconds: float) -> str:
    lines = [f"{'mode':<12} " + " ".join(f"{short:>7}" for _, short in COLUMNS) + "  onset drift"]
    for mode, m in [*fig["modes"].items(), ("all", fig["total"])]:
        lines.append(f"{mode:<12} " + " ".join(f"{m[key]:>7}" for key, _ in COLUMNS) + f"  {_drift(m['drift'])}")
    for fmt, ids in skipped.items():
        lines.append(f"not replayed: {len(ids)} {fmt} run(s): {NOT_REPLAYED[fmt]}")
    cases = fig["cases"]
    lines += ["", f"contradicted alerts ({len(cases['contradicted'])}):"]
    lines += [f"  {c['run']} [{c['mode']}]: {c['status']} {c['check']} ({c['kind']}) at step {c['step']}, onset "
              f"{c['onset']}; final: {c['final']}" for c in cases["contradicted"]]
    lines += ["", f"warnings the final diagnosis does not hold, withdrawn live ({len(cases['withdrawn_warnings'])}):"]
    lines += [f"  {c['run']} [{c['mode']}]: {c['check']} ({c['kind']}) at step {c['step']}, onset {c['onset']}; "
              f"final: {c['final']}" for c in cases["withdrawn_warnings"]]
    lines += ["", f"contradicted consequences ({len(cases['consequences'])}):"]
    lines += [f"  {c['run']} [{c['mode']}]: {c['status']} {c['check']} at step {c['step']}, under {c['under']} "
              f"(alert at step {c['alert_step']})" for c in cases["consequences"]]
    lines += ["", "looks that showed steps the final run does not have there (by replay: looks, distinct steps, "
                  "the first such look):"]
    for (run, mode), group in _grouped(cases["steps"]).items():
        first = group[0]
        wrong = {x for c in group for x in c["shown"]}
        lines.append(f"  {run} [{mode}]: {len(group)} looks, {len(wrong)} steps; look {first['look']} showed "
                     f"{_steps(first['shown'])} where the final run has {_steps(first['final']) or 'nothing'}")
    lines += ["", "looks that showed values the final run does not have at the same step:"]
    for (run, mode), group in _grouped(cases["values"]).items():
        lines.append(f"  {run} [{mode}]: {len(group)} looks; look {group[0]['look']} at steps "
                     f"{_steps(group[0]['steps'])}")
    lines += ["", "looks whose steps do not extend the previous look's:"]
    for (run, mode), group in _grouped(cases["backward"]).items():
        lines.append(f"  {run} [{mode}]: {len(group)} looks; last step " + ", ".join(
            f"{c['was']} -> {c['now']} (look {c['look']})" for c in group[:4]) + (", …" if len(group) > 4 else ""))
    lines += [f"  final mismatch: {c['run']} [{c['mode']}]: the watcher's last run has {c['shown']} steps, the "
              f"file {c['final']}" for c in cases["final"]]
    lines += [f"  error: {c['run']} [{c['mode']}]: {c['error']}" for c in cases["errors"]]
    lines += ["", "largest onset drifts:"]
    lines += [f"  {d['run']} [{d['mode']}]: {d['check']} alert onset {d['alert']}, final {d['final']}"
              for d in fig["worst_drift"] if d["drift"]]
    lines += ["", "lead time (damage step − first alert of the family; positive: before the damage):",
              f"  {'family':<18} {'runs':>5} {'alerted':>8} {'median':>8} {'worst':>7}  no alert before the damage"]
    for family, e in fig["leads"].items():
        med = "-" if e["median"] is None else f"{e['median']:g}"
        worst = "-" if e["worst"] is None else str(e["worst"])
        lines.append(f"  {family:<18} {e['runs']:>5} {e['alerted']:>8} {med:>8} {worst:>7}  "
                     f"{len(e['none_before'])}: {', '.join(e['none_before'])}")
    lines += ["", f"runtime: {seconds:.0f} s; slowest replays: "
              + ", ".join(f"{run} [{mode}] {took:.1f} s" for run, mode, took in fig["slowest"])]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures and every case as JSON")
    parser.add_argument("--only", help="replay only runs whose id contains this text")
    parser.add_argument("--runs", help="replay only these runs (ids separated by commas)")
    parser.add_argument("--modes", help="replay only in these modes (comma-separated: lines, burst-4k, burst-8k, "
                                        "checkpoints, records, blocks)")
    parser.add_argument("--jobs", type=int, default=2, help="replays run at once, one process each (default 2)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    todo, skipped = tasks(args.only, args.modes.split(",") if args.modes else None,
                                    args.runs.split(",") if args.runs else None)
    fig = figures(run_all(todo, args.jobs))
    seconds = time.perf_counter() - started
    if args.json:
        print(json.dumps({**fig, "not_replayed": skipped, "seconds": round(seconds, 1)},
                         indent=1, default=str))
    else:
        print(render(fig, skipped, seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
