"""The corpus of real public runs (benchmarks/corpus/): rlvitals is scored on every labelled run, and the
figures may not fall below the ones pinned here (raise them when a fix earns it, never lower them to let a
change through). The scoring itself is tested on constructed labels, so a figure means what it says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import corpus_eval  # noqa: E402

#: measured on the 85 runs (14 from tests/fixtures/real, 64 copied, 7 made here): recall 0.949, must-nots
#: 0.996, verdicts 0.965, headlines 0.941 — pinned a little below, so one relabelled run does not fail the suite
PINNED = {"runs": 85, "read_right": 1.0, "recall": 0.94, "must_nots_avoided": 0.995, "verdict_accuracy": 0.95,
          # issue 34: the headline names the labelled root cause (family and onset window; none on a healthy run)
          "headline_right": 0.93}
MAX_FALSE_WARN_PER_HEALTHY = 0.0
#: warn/fail cards shown on their own (root causes; consequences sit under them) per labelled root cause
MAX_CARDS_PER_CAUSE = 1.5
#: fail findings, a crash aside, on runs whose outcome clearly improved (label improved = true)
MAX_IMPROVED_FAIL = 0
#: issue 34: a finding's words against the numbers it read (benchmarks/words_numbers.py), over every corpus run
MAX_CONTRADICTIONS = 0


@pytest.fixture(scope="module")
def figures() -> dict[str, float]:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "corpus_eval.py"), "--json"],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    out: dict[str, float] = json.loads(done.stdout)["figures"]
    return out


@pytest.mark.process
def test_the_corpus_figures_hold(figures: dict[str, float]) -> None:
    assert figures["runs"] >= PINNED["runs"]
    for key in ("read_right", "recall", "must_nots_avoided", "verdict_accuracy", "headline_right"):
        assert figures[key] >= PINNED[key], (key, figures[key])
    assert figures["false_fail"] == 0
    assert figures["false_warn_per_healthy"] <= MAX_FALSE_WARN_PER_HEALTHY
    assert figures["cards_per_cause"] <= MAX_CARDS_PER_CAUSE, figures["cards_per_cause"]
    assert figures["improved_fail"] <= MAX_IMPROVED_FAIL and figures["improved"] >= 40, figures
    assert figures["contradictions"] <= MAX_CONTRADICTIONS, "run corpus_eval.py --misses to see them"


def test_the_corpus_is_large_varied_and_sourced() -> None:
    runs = corpus_eval.labelled_runs()
    assert len(runs) >= 40
    formats = {label["run"]["format"] for _, _, label in runs}
    algorithms = {label["run"]["algorithm"] for _, _, label in runs}
    assert {"verl-console", "trl-state", "trl-console", "notebook", "csv", "wandb-offline", "tensorboard"} <= formats
    assert {"grpo", "ppo", "reinforce++", "dpo-family", "orpo", "kto", "rm", "sft", "gpg"} <= algorithms
    healthy = [label["run"]["healthy"] for _, _, label in runs]
    assert any(healthy) and not all(healthy)
    for run_id, folder, label in runs:
        if str(label["run"]["input"]).startswith(corpus_eval.FIXTURE):
            path = corpus_eval.resolve_input(folder, label)  # tests/fixtures/real/, its provenance beside it
            assert path.is_file() and path.with_name(path.name + ".source.txt").is_file(), run_id
            continue
        source = corpus_eval.tomllib.loads((folder / "source.toml").read_text(encoding="utf-8"))
        if "made_by" in source:
            # made here (corpus/README.md, "Runs made here"): the script that made it is in the repository,
            # the command reruns it, and the bytes are those the script saved
            import hashlib

            assert (ROOT / source["made_by"]).is_file() and source["made_by"] in source["command"], run_id
            assert source["file"], run_id
            for entry in source["file"]:
                data = (folder / entry["saved_as"]).read_bytes()
                assert hashlib.sha256(data).hexdigest() == entry["sha256"], (run_id, entry["saved_as"])
                assert len(data) == entry["bytes"], (run_id, entry["saved_as"])
            continue
        assert source["repository"] and len(source["commit"]) == 40 and source["licence"], run_id
        for entry in source["file"]:
            assert (folder / entry["saved_as"]).stat().st_size == entry["bytes"], run_id


def test_every_label_names_known_families_and_valid_windows() -> None:
    families = corpus_eval.load_families()
    for run_id, _, label in corpus_eval.labelled_runs():
        meta = label["run"]
        assert meta["verdict"] in ("ok", "warn", "fail") and isinstance(meta["healthy"], bool), run_id
        assert not (meta["healthy"] and meta["verdict"] != "ok"), f"{run_id}: a healthy run's verdict is ok"
        for kind in ("must_find", "may_find", "must_not"):
            for entry in label.get(kind, []):
                assert entry["family"] == "*" or entry["family"] in families, (run_id, entry["family"])
                assert entry.get("why"), (run_id, kind)
        for must in label.get("must_find", []):
            lo, hi = must["onset"]
            assert lo <= hi and must["status"] in ("note", "warn", "fail"), run_id
        assert isinstance(meta.get("improved"), bool), f"{run_id}: [run] improved must be true or false"
        headline = label.get("headline")
        assert isinstance(headline, dict), f"{run_id}: every label has a [headline]"
        assert headline["family"] == "none" or headline["family"] in families, (run_id, headline["family"])
        assert isinstance(headline.get("why"), str) and headline["why"], run_id
        for key in ("consequences", "independent"):
            named = headline.get(key, [])
            assert isinstance(named, list) and all(f in families for f in named), (run_id, key, named)
        assert "consequences" in headline, run_id
        if headline["family"] == "none":
            assert "onset" not in headline, f"{run_id}: a headline 'none' has no onset"
        else:
            onset = headline["onset"]
            assert isinstance(onset, list) and len(onset) == 2 and all(isinstance(s, int) for s in onset), run_id
            assert 0 <= onset[0] <= onset[1], (run_id, onset)
        assert (headline["family"] == "none") == meta["healthy"], \
            f"{run_id}: a healthy run's headline is 'none', an unhealthy run's names its root cause"


# -- the scoring, on constructed labels ---------------------------------------------------------------

RUN = "trlstate__mistral7b-dpo-selfreward-m2v2-zerograd"  # grad_norm exactly 0 on 100/100 steps


def _score(**label: object) -> corpus_eval.Outcome:
    folder = corpus_eval.CORPUS / "runs" / RUN
    base = corpus_eval.tomllib.loads((folder / "labels.toml").read_text(encoding="utf-8"))
    return corpus_eval.evaluate(RUN, folder, {"run": base["run"], **label}, corpus_eval.load_families())


def test_a_must_find_counts_only_in_its_window_and_at_its_status() -> None:
    found = _score(must_find=[{"family": "grad_vanishing", "status": "fail", "onset": [1, 5], "why": "w"}])
    assert found.found[0][1] is not None and found.found[0][1].check in ("grad_norm_zero", "grad_norm_vanishing")
    late = _score(must_find=[{"family": "grad_vanishing", "status": "fail", "onset": [50, 60], "why": "w"}])
    hit, misdated = late.found[0][1], late.found[0][2]
    assert hit is None and misdated, "found outside its window: a miss, listed as misdated"


def test_an_unlabelled_warning_is_a_false_alarm_and_a_must_not_is_counted() -> None:
    bare = _score()
    assert bare.alarms and all(s.status in ("warn", "fail") for s in bare.alarms)
    named = _score(must_not=[{"family": "*", "status": "fail", "why": "w"}])
    assert named.must_nots == 1 and named.violated, "a fail on this run breaks a '*' fail must-not"
    explained = _score(may_find=[{"family": f, "why": "w"} for f in corpus_eval.load_families()])
    assert explained.alarms == []


def test_the_headline_counts_only_its_family_in_its_window() -> None:
    """The zero-gradient DPO run: grad_norm is exactly 0 on every step (the story's root cause, with the flat
    loss and margins under it)."""
    def head(**headline: object) -> corpus_eval.Outcome:
        return _score(headline={"consequences": [], "why": "w", **headline})

    assert head(family="grad_vanishing", onset=[1, 5]).headline_right
    assert not head(family="grad_vanishing", onset=[20, 30]).headline_right, "right family, wrong onset"
    assert not head(family="kl_high", onset=[1, 5]).headline_right, "another family"
    assert not head(family="none").headline_right, "a run with a root cause is not 'none'"
    named = head(family="grad_vanishing", onset=[1, 5], independent=["pref_margins"])
    assert named.root_causes == 2 and named.cards >= 1


def test_contradictions_are_counted_and_listed_under_their_run() -> None:
    scored = _score()
    assert scored.contradictions == [], "the zero-gradient run's words hold against its numbers"
    said = "spike_words: kl_jump (en): says 'jumped' with an evidence ratio of 1.2, below its threshold 3"
    scored.contradictions = [said]
    fig = corpus_eval.figures([scored])
    assert fig.contradictions == 1 and fig.as_dict()["contradictions"] == 1
    text = corpus_eval.render([scored], fig, corpus_eval.load_families(), misses=True)
    assert "contradictions (words against their numbers): 1" in text
    assert f"{RUN}\n" in text and f"\n  contradiction: {said}" in text.split(f"{RUN}\n", 1)[1]


def test_an_unknown_family_in_a_label_is_refused() -> None:
    with pytest.raises(SystemExit, match=r"family 'no_such' is not in families.toml"):
        _score(must_find=[{"family": "no_such", "status": "warn", "onset": [1, 2], "why": "w"}])


def test_a_run_that_cannot_be_read_is_an_outcome_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "junk.log").write_text("nothing to see here\n", encoding="utf-8")
    label = {"run": {"input": "junk.log", "format": "verl-console", "framework": "verl", "algorithm": "grpo",
                     "records": 1, "last_step": 1, "healthy": True, "verdict": "ok"},
             "must_find": [{"family": "crash", "status": "fail", "onset": [0, 1], "why": "w"}]}
    out = corpus_eval.evaluate("junk", tmp_path, label, corpus_eval.load_families())
    assert out.error.startswith("UnknownFormatError") and not out.read_right and out.found[0][1] is None
