"""``--one-run``: the PATHs of inspect, diagnose, report and export are one run's launches, read as one
run in step order (without it, two files are two runs to compare). Launches cut from a real veRL console
log; their errors are the words a user reads."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from conftest import REAL

import rlvitals
from rlvitals.cli import main

GRPO = REAL / "verl__verl_training_log__grpo_run_deepseek7b_llm.log"
NOTE = "50 steps (551–600) that {a} logged were logged again by {b}"


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def launches(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    lines = GRPO.read_text(encoding="utf-8").splitlines(keepends=True)
    at = {int(line[5:line.index(" ")]): i for i, line in enumerate(lines) if line.startswith("step:")}
    folder = tmp_path_factory.mktemp("launches")
    a, b = folder / "launch1.log", folder / "launch2.log"
    a.write_text("".join(lines[: at[600] + 1]), encoding="utf-8")
    b.write_text("".join(lines[:52] + lines[at[551]:]), encoding="utf-8")
    return str(a), str(b)


def test_diagnose_one_run_is_one_run_with_its_note(launches: tuple[str, str]) -> None:
    a, b = launches
    code, out, err = _cli("diagnose", "--json", a, b)
    assert code == 0 and len(orjson.loads(out)["runs"]) == 2  # without it: two runs
    code, out, err = _cli("diagnose", "--json", "--one-run", b, a)
    (run,) = orjson.loads(out)["runs"]
    assert code == 0 and run["path"] == f"{a} + {b}"
    assert run["steps"] == 1119
    _, whole, _ = _cli("diagnose", "--json", str(GRPO))
    assert [(f["check"], f["status"], f.get("onset_step")) for f in run["findings"]] == \
        [(f["check"], f["status"], f.get("onset_step")) for f in orjson.loads(whole)["runs"][0]["findings"]]
    assert err.startswith("rlvitals: --one-run: " + NOTE.format(a=a, b=b)) and err.count("\n") == 1


def test_the_note_in_chinese(launches: tuple[str, str]) -> None:
    a, b = launches
    code, _, err = _cli("diagnose", "--lang", "zh", "--one-run", a, b)
    assert code == 0 and err == (f"rlvitals：--one-run：{a} 记录过的 50 个 step（551–600）又被 {b} 记录了一次"
                                 "（从更早的 checkpoint 恢复的一次启动）：这些 step 取后一次启动的值\n")


def test_inspect_one_run_lists_the_note(launches: tuple[str, str]) -> None:
    a, b = launches
    code, out, err = _cli("inspect", "--json", "--one-run", a, b)
    (summary,) = [orjson.loads(line) for line in out.splitlines()]
    assert code == 0 and any(n.startswith(NOTE.format(a=a, b=b)) for n in summary["notes"])


def test_report_one_run_writes_one_run(launches: tuple[str, str], tmp_path: Path) -> None:
    a, b = launches
    html = tmp_path / "r.html"
    code, _, err = _cli("report", "--one-run", a, b, "-o", str(html))
    assert code == 0, err
    text = html.read_text(encoding="utf-8")
    assert f"{Path(a).name}" in text and NOTE.format(a=a, b=b) in err


def test_one_run_errors(launches: tuple[str, str], tmp_path: Path) -> None:
    a, b = launches
    code, out, err = _cli("diagnose", "--one-run", a, str(tmp_path / "launch3.log"))
    assert code == 2 and out == ""
    assert err.startswith(f"rlvitals: --one-run: {tmp_path / 'launch3.log'}")
    code, _, err = _cli("diagnose", "--one-run", a, b, "--rollouts", str(tmp_path), "--rollouts", str(tmp_path))
    assert code == 2 and err == ("rlvitals: --one-run reads the 2 PATHs as one run, which takes one --rollouts DIR "
                                 "(the run's rollout folder), not 2\n")


def test_one_run_takes_the_run_rollout_folder(launches: tuple[str, str], tmp_path: Path) -> None:
    """One --rollouts for the joined run: veRL's rollout_data_dir, where the resumed launch rewrote the
    steps it repeated (here 600) and wrote on (601)."""
    from rlvitals.rollout.writers import write_verl_dump

    a, b = launches
    for step in (599, 600, 601):
        write_verl_dump([{"prompt": f"What is {i} + {i}?", "response": str(2 * i + (j % 2)), "score": float(j % 2 == 0),
                          "target": str(2 * i)} for i in range(2) for j in range(4)], tmp_path / "rollouts", step)
    code, out, err = _cli("diagnose", "--json", "--one-run", a, b, "--rollouts", str(tmp_path / "rollouts"))
    (run,) = orjson.loads(out)["runs"]
    assert code == 0 and run["rollouts"]["path"] == str(tmp_path / "rollouts")
    code, out, _ = _cli("export", "--one-run", a, b, "--rollouts", str(tmp_path / "rollouts"),
                        "--tensorboard", str(tmp_path / "tb"))
    assert code == 0 and list((tmp_path / "tb").glob("events.out.tfevents.*"))
    exported = rlvitals.load(tmp_path / "tb")[0]
    pass1 = exported.raw.filter(exported.raw["rlvitals/pass@1"].is_not_null())
    assert pass1["step"].to_list() == [599, 600, 601] and pass1["rlvitals/pass@1"].to_list() == [0.5] * 3
