"""How rlvitals does on the corpus of real public runs (benchmarks/corpus/): read right, must-finds
found in their onset window, must-nots avoided, false alarms on healthy runs, verdicts, contradictions of
the findings' words against their numbers (words_numbers.py), and precision per check / recall per family.

    python benchmarks/corpus_eval.py             # the tables
    python benchmarks/corpus_eval.py --misses    # also every miss, misdated find, false alarm, contradiction
    python benchmarks/corpus_eval.py --json      # the figures, for tests/test_corpus_eval.py

The labels (runs/*/labels.toml, schema in corpus/README.md) were written from the raw numbers, not from
rlvitals; families.toml ties each label family to the checks that may raise it. A run whose input is one of
the real fixtures the tests read (``input = "fixture:<name>"``) is read from tests/fixtures/real/.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
#: the real public logs the tests read; a label's ``input = "fixture:<name>"`` names one of them
FIXTURES = HERE.parent / "tests" / "fixtures" / "real"
FIXTURE = "fixture:"
RANK = {"skipped": -1, "ok": 0, "note": 1, "warn": 2, "fail": 3}
ALARM = ("warn", "fail")
READ_FIELDS = ("format", "framework", "algorithm", "records", "last_step")


@dataclass(frozen=True)
class Seen:
    """One finding of rlvitals, as the evaluation needs it."""

    check: str
    status: str
    onset: int | None
    points: tuple[int, ...]
    title: str

    def when(self) -> str:
        if self.points:
            return "at " + ", ".join(str(p) for p in self.points[:6])
        return f"at {self.onset}" if self.onset is not None else "(no onset)"


@dataclass
class Outcome:
    """What rlvitals did on one labelled run."""

    run_id: str
    label: dict[str, Any]
    error: str = ""
    read: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # field -> (label, rlvitals)
    verdict: str = ""
    found: list[tuple[dict[str, Any], Seen | None, list[Seen]]] = field(default_factory=list)  # (must, hit, misdated)
    violated: list[tuple[dict[str, Any], list[Seen]]] = field(default_factory=list)
    must_nots: int = 0
    alarms: list[Seen] = field(default_factory=list)  # warn/fail findings no label explains
    findings: list[Seen] = field(default_factory=list)
    headline: Seen | None = None  # the root cause the diagnosis opens with
    cards: int = 0  # warn/fail findings shown as cards of their own: the root causes (consequences sit under them)
    contradictions: list[str] = field(default_factory=list)  # words against their numbers (words_numbers.py)

    @property
    def headline_right(self) -> bool:
        """The labelled root cause's family, with its onset in the window; "none" when nothing is to act on."""
        want = self.label.get("headline", {})
        if not want or self.error:
            return False
        if want["family"] == "none":
            return self.headline is None
        return self.headline is not None and self.headline.check in self.label_checks \
            and _in_window(self.headline, want["onset"], self.first_step)

    @property
    def root_causes(self) -> int:
        """How many root causes the label names: its headline and the independent ones."""
        want = self.label.get("headline", {})
        return 0 if not want or want["family"] == "none" else 1 + len(want.get("independent", []))

    label_checks: tuple[str, ...] = ()
    first_step: int | None = None

    @property
    def healthy(self) -> bool:
        return bool(self.label["run"].get("healthy"))

    @property
    def read_right(self) -> bool:
        return not self.error and all(a == b for a, b in self.read.values())


def load_families(path: Path = CORPUS / "families.toml") -> dict[str, tuple[str, ...]]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {name: tuple(entry.get("checks", ())) for name, entry in data.get("family", {}).items()}


def labelled_runs(root: Path = CORPUS / "runs") -> list[tuple[str, Path, dict[str, Any]]]:
    out = []
    for labels in sorted(root.glob("*/labels.toml")):
        out.append((labels.parent.name, labels.parent, tomllib.loads(labels.read_text(encoding="utf-8"))))
    return out


def resolve_input(folder: Path, label: dict[str, Any]) -> Path:
    """The file or folder a label's ``input`` names: in the run's folder, or ``fixture:<name>`` in
    tests/fixtures/real/."""
    name = str(label["run"]["input"])
    if name.startswith(FIXTURE):
        return FIXTURES / name.removeprefix(FIXTURE)
    return folder / name


def _in_window(seen: Seen, window: Sequence[int], first_step: int | None) -> bool:
    lo, hi = int(window[0]), int(window[1])
    steps = list(seen.points) or ([seen.onset] if seen.onset is not None else [])
    if not steps:  # a finding about the whole run: counts when the window holds the run's start
        return first_step is not None and lo <= first_step <= hi
    return any(lo <= s <= hi for s in steps)


def _checks_of(families: dict[str, tuple[str, ...]], name: str, run_id: str) -> tuple[str, ...]:
    if name == "*":
        return ("*",)
    if name not in families:
        raise SystemExit(f"{run_id}/labels.toml: family {name!r} is not in families.toml")
    return families[name]


def evaluate(run_id: str, folder: Path, label: dict[str, Any], families: dict[str, tuple[str, ...]]) -> Outcome:
    """Read, diagnose and score one labelled run; an error reading it is an outcome, not a crash."""
    from words_numbers import contradictions

    import rlvitals

    out = Outcome(run_id, label)
    meta = label["run"]
    try:
        runs = rlvitals.load(resolve_input(folder, label))
        run = runs[0]
        diagnosis = rlvitals.diagnose(run)
    except Exception as exc:  # noqa: BLE001 - any failure to read is what the evaluation reports
        out.error = f"{type(exc).__name__}: {exc}"
        out.found = [(m, None, []) for m in label.get("must_find", [])]
        return out
    steps = [int(s) for s in run.train_steps]
    # the last step the run reached: its last training record, or later when its source says so (a
    # trainer_state.json's global_step); 0 for a run that died before its first step
    last = getattr(run, "last_step", steps[-1] if steps else None)
    got = {"format": run.format, "framework": run.framework, "algorithm": run.algorithm,
           "records": len(steps), "last_step": last if last is not None else 0}
    out.read = {k: (meta[k], got[k]) for k in READ_FIELDS if k in meta}
    if len(runs) > 1:
        out.read["runs"] = (1, len(runs))
    out.verdict = diagnosis.verdict
    out.contradictions = contradictions(run, diagnosis)
    out.findings = [Seen(f.check, f.status, f.onset_step, tuple(f.points), f.title["en"])
                    for f in diagnosis.findings if f.status in ("note", "warn", "fail")]
    first = steps[0] if steps else 0
    head = diagnosis.headline
    if head is not None:
        out.headline = Seen(head.finding.check, head.finding.status, head.onset_step, (), head.finding.title["en"])
    out.cards = len(diagnosis.causes())
    out.first_step = first
    want = label.get("headline", {})
    if want.get("family", "none") != "none":
        out.label_checks = _checks_of(families, want["family"], run_id)
    explained: set[str] = set()
    for must in label.get("must_find", []):
        checks = _checks_of(families, must["family"], run_id)
        explained.update(checks)
        strong = [s for s in out.findings if s.check in checks and RANK[s.status] >= RANK[must["status"]]]
        hit = next((s for s in strong if _in_window(s, must["onset"], first)), None)
        out.found.append((must, hit, [] if hit else strong))
    for may in label.get("may_find", []):
        explained.update(_checks_of(families, may["family"], run_id))
    for must_not in label.get("must_not", []):
        out.must_nots += 1
        checks = _checks_of(families, must_not["family"], run_id)
        before = must_not.get("before")
        bad = [s for s in out.findings if ("*" in checks or s.check in checks)
               and RANK[s.status] >= RANK[must_not["status"]]
               and (before is None or (s.onset is not None and s.onset < int(before)))]
        if bad:
            out.violated.append((must_not, bad))
    out.alarms = [s for s in out.findings if s.status in ALARM and s.check not in explained]
    return out


@dataclass(frozen=True)
class Figures:
    runs: int
    read_right: float
    must_finds: int
    recall: float
    must_nots: int
    must_nots_avoided: float
    healthy: int
    false_fail: int
    false_warn_per_healthy: float
    verdict_accuracy: float
    #: the headline names the labelled root cause (its family, its onset in the window; none on a healthy run)
    headline_right: float = 0.0
    #: warn/fail cards (root causes shown on their own) per labelled root cause, on the unhealthy runs
    cards_per_cause: float = 0.0
    #: runs whose outcome clearly improved (label ``improved``), and how many of them a finding fails (a crash,
    #: which ends a run whatever it learnt, not counted)
    improved: int = 0
    improved_fail: int = 0
    #: what the findings say held against the numbers they read (benchmarks/words_numbers.py): must be 0
    contradictions: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def figures(outcomes: Sequence[Outcome]) -> Figures:
    n = len(outcomes)
    musts = [hit for o in outcomes for _, hit, _ in o.found]
    healthy = [o for o in outcomes if o.healthy]
    # a false alarm and a must-not it breaks are one wrong finding, counted once
    wrong = {(id(o), s) for o in healthy for s in o.alarms + [x for _, bad in o.violated for x in bad]}
    false_fail = sum(1 for _, s in wrong if s.status == "fail")
    false_warn = sum(1 for _, s in wrong if s.status == "warn")
    must_nots = sum(o.must_nots for o in outcomes)
    return Figures(
        runs=n,
        read_right=sum(o.read_right for o in outcomes) / n if n else 0.0,
        must_finds=len(musts), recall=sum(h is not None for h in musts) / len(musts) if musts else 1.0,
        must_nots=must_nots,
        must_nots_avoided=1 - sum(len(o.violated) for o in outcomes) / must_nots if must_nots else 1.0,
        healthy=len(healthy), false_fail=false_fail,
        false_warn_per_healthy=false_warn / len(healthy) if healthy else 0.0,
        verdict_accuracy=sum(o.verdict == o.label["run"]["verdict"] for o in outcomes) / n if n else 0.0,
        headline_right=sum(o.headline_right for o in outcomes) / n if n else 0.0,
        cards_per_cause=_mean([o.cards / o.root_causes for o in outcomes if o.root_causes]),
        improved=sum(bool(o.label["run"].get("improved")) for o in outcomes),
        improved_fail=sum(bool(o.label["run"].get("improved")) and _fails_learning(o) for o in outcomes),
        contradictions=sum(len(o.contradictions) for o in outcomes),
    )


#: a crash ends a run whatever it had learnt: a run that improved and then died is failed for its death, which
#: the improved-runs figure (about judging how a run learns) does not count
ENDINGS = ("run_crashed",)


def _fails_learning(o: Outcome) -> bool:
    """Whether the run's verdict is fail for something other than how it ended (a crash)."""
    return any(s.status == "fail" and s.check not in ENDINGS for s in o.findings)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def per_check(outcomes: Sequence[Outcome], families: dict[str, tuple[str, ...]]) -> dict[str, dict[str, int]]:
    """For each check: warn/fail findings that a label explains (tp) or calls false (fp), and must-finds
    it raised in their window (found)."""
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for o in outcomes:
        wrong = {id(s) for s in o.alarms} | {id(s) for _, bad in o.violated for s in bad}
        for s in o.findings:
            if s.status in ALARM:
                table[s.check]["fp" if id(s) in wrong else "tp"] += 1
        for _, hit, _ in o.found:
            if hit is not None:
                table[hit.check]["found"] += 1
    return {k: dict(v) for k, v in sorted(table.items())}


def per_family(outcomes: Sequence[Outcome]) -> dict[str, tuple[int, int]]:
    """``family -> (found, must-finds)``."""
    table: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for o in outcomes:
        for must, hit, _ in o.found:
            table[must["family"]][1] += 1
            table[must["family"]][0] += hit is not None
    return {k: (v[0], v[1]) for k, v in sorted(table.items())}


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def render(outcomes: Sequence[Outcome], fig: Figures, families: dict[str, tuple[str, ...]],
           misses: bool) -> str:
    lines = [f"{'run':<58} {'read':<5} {'verdict':<13} {'found':<6} {'false':<5} {'must-not':<9} {'head':<5} cards"]
    for o in outcomes:
        found = sum(h is not None for _, h, _ in o.found)
        verdict = f"{o.verdict or 'error'}/{o.label['run']['verdict']}"
        lines.append(f"{o.run_id[:58]:<58} {'yes' if o.read_right else 'NO':<5} {verdict:<13} "
                     f"{found}/{len(o.found):<4} {len(o.alarms):<5} {len(o.violated)}/{o.must_nots:<7} "
                     f"{'yes' if o.headline_right else 'NO':<5} {o.cards}/{o.root_causes}")
    lines += ["", f"runs: {fig.runs}",
              f"read right: {_pct(fig.read_right)}",
              f"recall of must-finds (onset in window): {_pct(fig.recall)} of {fig.must_finds}",
              f"must-nots avoided: {_pct(fig.must_nots_avoided)} of {fig.must_nots}",
              f"false fail on healthy runs: {fig.false_fail}; false warn per healthy run: "
              f"{fig.false_warn_per_healthy:.2f} ({fig.healthy} healthy runs)",
              f"verdict accuracy: {_pct(fig.verdict_accuracy)}",
              f"headline right (root-cause family, onset in window; none on healthy runs): "
              f"{_pct(fig.headline_right)}",
              f"warn/fail cards per labelled root cause (unhealthy runs): {fig.cards_per_cause:.2f}",
              f"fail findings (a crash aside) on runs whose outcome clearly improved: {fig.improved_fail} of "
              f"{fig.improved}",
              f"contradictions (words against their numbers): {fig.contradictions}", "",
              f"{'check':<28} {'precision':>10} {'tp':>4} {'fp':>4} {'found':>6}"]
    for check, row in per_check(outcomes, families).items():
        tp, fp = row.get("tp", 0), row.get("fp", 0)
        precision = _pct(tp / (tp + fp)) if tp + fp else "-"
        lines.append(f"{check:<28} {precision:>10} {tp:>4} {fp:>4} {row.get('found', 0):>6}")
    lines += ["", f"{'family':<20} {'recall':>10} {'found':>6} {'of':>4}"]
    for family, (found, total) in per_family(outcomes).items():
        lines.append(f"{family:<20} {_pct(found / total):>10} {found:>6} {total:>4}")
    if misses:
        lines += ["", *_misses(outcomes)]
    return "\n".join(lines)


def _misses(outcomes: Iterable[Outcome]) -> list[str]:
    out = []
    for o in outcomes:
        rows = []
        if o.error:
            rows.append(f"  not read: {o.error}")
        rows += [f"  read {k}: label {a!r}, rlvitals {b!r}" for k, (a, b) in o.read.items() if a != b]
        if o.verdict and o.verdict != o.label["run"]["verdict"]:
            rows.append(f"  verdict: label {o.label['run']['verdict']}, rlvitals {o.verdict}")
        want = o.label.get("headline", {})
        if want and not o.headline_right and not o.error:
            said = "none" if o.headline is None else f"{o.headline.check} {o.headline.status} {o.headline.when()}"
            rows.append(f"  headline: label {want['family']} in {want.get('onset', '-')}, rlvitals {said}")
        for must, hit, strong in o.found:
            if hit is None:
                where = "; raised " + ", ".join(f"{s.check} {s.status} {s.when()}" for s in strong) if strong else ""
                rows.append(f"  missed {must['family']} {must['status']} in {must['onset']}{where}")
        for must_not, bad in o.violated:
            rows.append(f"  said what it must not ({must_not['family']} ≥ {must_not['status']}): "
                        + ", ".join(f"{s.check} {s.status} {s.when()}" for s in bad))
        rows += [f"  false alarm: {s.check} {s.status} {s.when()} — {s.title}" for s in o.alarms]
        rows += [f"  contradiction: {c}" for c in o.contradictions]
        if rows:
            out += [o.run_id, *rows]
    return out


def run_all(only: str | None = None) -> list[Outcome]:
    families = load_families()
    return [evaluate(run_id, folder, label, families) for run_id, folder, label in labelled_runs()
            if not only or only in run_id]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--misses", action="store_true",
                        help="list every miss, misdated find, false alarm and contradiction")
    parser.add_argument("--only", help="evaluate only runs whose id contains this text")
    args = parser.parse_args(argv)
    outcomes = run_all(args.only)
    fig = figures(outcomes)
    if args.json:
        import json

        families = load_families()
        print(json.dumps({"figures": fig.as_dict(), "per_check": per_check(outcomes, families),
                          "per_family": {k: list(v) for k, v in per_family(outcomes).items()},
                          "runs": {o.run_id: {"read_right": o.read_right, "error": o.error,
                                              "verdict": o.verdict,
                                              "found": [h is not None for _, h, _ in o.found],
                                              "false_alarms": [f"{s.check}:{s.status}" for s in o.alarms],
                                              "violated": len(o.violated), "headline_right": o.headline_right,
                                              "headline": None if o.headline is None else o.headline.check,
                                              "cards": o.cards, "root_causes": o.root_causes,
                                              "contradictions": o.contradictions}
                                   for o in outcomes}}, indent=1))
    else:
        print(render(outcomes, fig, load_families(), args.misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
