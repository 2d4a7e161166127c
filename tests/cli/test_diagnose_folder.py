"""`rlvitals diagnose FOLDER` and `inspect FOLDER` on real corpus runs: the table of runs first, `--brief`,
paths never cut however the output is wrapped, and a note shared by several runs said once."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import orjson
import pytest
from corpus import CORPUS, corpus_input

from rlvitals.cli import main

#: a folder name for each corpus run copied in: three TRL runs whose logs do not tell the TRL version (the
#: 'reward_std' note) and a healthy veRL run
RUNS = {"blowup": "trlconsole__nips-grpo-dynamics__qwen25-7b-grpo-entropy-blowup",
        "collapse": "trlconsole__trldapo_qwen25vl3b_grpo_collapse",
        "graphcross": "trlstate__qwen25-3b-grpo-graphcross-zerostd",
        "healthy": "verl__agent-opd__qwen2.5-3b-klreward0.0005-healthy"}
VERSION_NOTE = "'reward_std' means different things across trl versions"


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``runs/`` in the working folder: a copy of each of :data:`RUNS` in a folder of its own."""
    for name, run_id in RUNS.items():
        source = corpus_input(run_id)
        where = tmp_path / "runs" / name
        inner = source.relative_to(CORPUS / run_id)  # a trainer_state.json keeps its checkpoint folder
        (where / inner).parent.mkdir(parents=True)
        shutil.copy(source, where / inner)
    monkeypatch.chdir(tmp_path)
    return Path("runs")


def _names(*argv: str) -> list[str]:
    """The runs' names as the diagnosis carries them (how a folder's runs are named is the readers' business;
    the views print that name, whole)."""
    return [run["path"] for run in orjson.loads(_cli("diagnose", "--json", *argv)[1])["runs"]]


def test_a_folder_opens_with_the_table_of_its_runs(runs: Path) -> None:
    code, out, err = _cli("diagnose", str(runs))
    assert code == 0 and err == ""
    names = _names(str(runs))
    assert len(set(names)) == 4 and all(name.startswith("runs/") for name in names)
    pad = max(map(len, names)) + 2
    lines = out.splitlines()
    assert lines[:6] == [
        "run".ljust(pad) + "verdict  steps  headline",
        names[0].ljust(pad) + "✗ FAIL      40  Entropy surge (step 25)",
        names[1].ljust(pad) + "✗ FAIL      49  Response length collapse (step 20)",
        names[2].ljust(pad) + "✗ FAIL      60  Zero-variance groups (step 50)",
        names[3].ljust(pad) + "✓ OK       179  nothing to act on",
        ""]
    # then each run's diagnosis as for one run, in the table's order, a blank line between two
    starts = [i for i, line in enumerate(lines) if line.split("  ")[0] in names and i > 5]
    assert [lines[i].split("  ")[0] for i in starts] == names
    assert starts[0] == 6 and all(lines[i - 1] == "" for i in starts)
    # a name and the line after it longer than the width (a pipe's 110): the name on a line of its own
    assert lines[6:8] == [names[0], "  trl · GRPO-style (group baseline, no critic) · 40 training steps  verdict: FAIL"]
    _, md, _ = _cli("diagnose", str(runs), "--markdown")
    assert md.startswith("| run | verdict | steps | headline |\n|---|---|---:|---|\n"
                         f"| {names[0]} | ✗ FAIL | 40 | Entropy surge (step 25) |\n")
    assert md.count("\n# runs/") == 4
    _, one, _ = _cli("diagnose", names[3])
    assert one.startswith(f"{names[3]}  verl · ")  # one run: no table


def test_brief_prints_a_block_per_run(runs: Path) -> None:
    code, out, _ = _cli("diagnose", str(runs), "--brief", "--fail-on", "fail")
    assert code == 1
    names = _names(str(runs))
    blocks = out.split("\n\n")
    assert [b.split("\n")[0] for b in blocks] == [
        f"{names[0]}  verdict: FAIL · 6 failures · 40 training steps",
        f"{names[1]}  verdict: FAIL · 4 failures · 1 warning · 49 training steps",
        f"{names[2]}  verdict: FAIL · 2 failures · 1 warning · 60 training steps",
        f"{names[3]}  verdict: OK · 1 note · 179 training steps"]
    assert blocks[2].split("\n")[1:] == ["  ✗ FAIL   step 50  L3 Zero-variance groups",
                                         "  ✗ FAIL   step 40  L3 ↳ Reward spread collapsing  0.018 → 0",
                                         "  ! WARN   step 60  L1 ↳ Gradient-norm vanishing  0.248 → 0.000246"]
    _, md, _ = _cli("diagnose", "runs/graphcross", "--brief", "--markdown", "--lang", "zh")
    assert md.splitlines()[4] == "- **失败** 第 50 步 · L3 **零方差组**"


def test_brief_and_all_together_are_refused_in_the_users_language(runs: Path) -> None:
    assert _cli("diagnose", str(runs), "--brief", "--all") == (
        2, "", "rlvitals: diagnose --brief lists only the warnings and failures, --all every check: give one of them\n")
    code, _, err = _cli("diagnose", str(runs), "--brief", "--all", "--lang", "zh")
    assert code == 2 and err.startswith("rlvitals：diagnose --brief 只列出警告和失败")


def test_a_long_path_is_never_cut_when_the_output_is_piped(tmp_path: Path) -> None:
    deep = tmp_path / "experiments-2026-december" / "grpo-qwen25-7b-rho1.00-seed43-entropy-blowup-investigation"
    deep.mkdir(parents=True)
    path = str(shutil.copy(corpus_input(RUNS["blowup"]), deep / "rho1.00_seed43.log"))
    other = str(shutil.copy(corpus_input(RUNS["healthy"]), deep / "output.log"))
    assert len(path) > 110  # wider than a piped output (StringIO is not a terminal)
    for argv in ([path], [path, "--all"], [path, "--brief"], [path, other], [path, other, "--brief"]):
        _, out, _ = _cli("diagnose", *argv)
        lines = out.splitlines()
        assert path in lines, argv  # whole, on a line of its own
        assert all(len(line) <= 110 for line in lines if path not in line and other not in line), argv
    _, out, _ = _cli("inspect", path)
    assert path in out.splitlines() and f"{path}:" in out.splitlines()  # the run's name, and the note naming it
    _, out, _ = _cli("diagnose", path, other)
    assert out.splitlines()[:5] == ["run", "  verdict  steps  headline", path,
                                    "  ✗ FAIL      40  Entropy surge (step 25)", other]


def test_a_note_shared_by_several_runs_is_said_once(runs: Path) -> None:
    _, doc, _ = _cli("inspect", str(runs), "--json")
    summaries = [orjson.loads(line) for line in doc.splitlines()]
    names = [s["path"] for s in summaries]
    # JSON keeps each run's notes whole: three of the runs carry the note
    assert [any(VERSION_NOTE in n for n in s["notes"]) for s in summaries] == [True, True, True, False]
    _, out, _ = _cli("inspect", str(runs))
    assert out.count(VERSION_NOTE) == 1
    said = " ".join(out[out.index("  note, for 3 of 4 runs"):].split())
    assert said.startswith(f"note, for 3 of 4 runs ({names[0]}, {names[1]}, {names[2]}): {VERSION_NOTE}")
    # a note about one run stays with it
    assert f"{names[0]}: the progress bar ran ahead" in " ".join(out.split(f"\n{names[1]}\n")[0].split())
    _, zh, _ = _cli("inspect", str(runs), "--lang", "zh")
    assert zh.count("'reward_std' 在 trl 的不同版本里含义不同") == 1
    assert f"  说明（4 个运行中的 3 个：{names[0]}、" in zh
