"""`rlvitals diagnose`: JSON schema, Markdown, exit codes, config errors."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest

from rlvitals.cli import main
from rlvitals.synthetic.simulate import Scenario, write_example


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def sick(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_example(tmp_path_factory.mktemp("sick"))["jsonl"]


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sc = Scenario(collapse_at=None, grad_spike_at=None)
    return write_example(tmp_path_factory.mktemp("healthy"), sc)["jsonl"]


def test_json_schema(sick: Path) -> None:
    code, out, err = _cli("diagnose", "--json", str(sick))
    assert code == 0 and err == ""
    doc = orjson.loads(out)
    (run,) = doc["runs"]
    assert run["path"] == str(sick) and run["verdict"] == "fail"
    assert set(run["layers"]) == {"L1", "L2", "L3", "L4", "L5", "L6", "efficiency"}
    assert run["layers"]["L2"]["verdict"] == "fail"
    collapse = next(f for f in run["findings"] if f["check"] == "entropy_collapse")
    assert collapse["status"] == "fail" and collapse["onset_step"] == collapse["span"][0]
    assert collapse["message"]["en"] and collapse["message"]["zh"] and collapse["advice"]["zh"]
    assert collapse["metrics"] == ["actor/entropy"] and "baseline" in collapse["evidence"]


def test_exit_codes_follow_fail_on(sick: Path, healthy: Path) -> None:
    assert _cli("diagnose", str(sick))[0] == 0
    assert _cli("diagnose", "--fail-on", "fail", str(sick))[0] == 1
    assert _cli("diagnose", "--fail-on", "warn", str(sick))[0] == 1
    code, out, _ = _cli("diagnose", "--fail-on", "fail", str(healthy))
    assert code == 0, out


def test_terminal_and_markdown_views(sick: Path) -> None:
    _, text, _ = _cli("diagnose", str(sick))
    assert text.index("Entropy collapse") < text.index("Gradient-norm spike")  # worst first
    assert __import__("re").search(r"since step 1(79|8[0-2])", text) and "verdict: FAIL" in text
    _, zh, _ = _cli("diagnose", "--lang", "zh", str(sick))
    assert "熵坍缩" in zh and "结论：失败" in zh
    _, md, _ = _cli("diagnose", "--markdown", str(sick))
    assert md.startswith(f"# {sick}") and "| L2 Policy behaviour" not in md
    assert "## Policy behaviour: how is the policy changing?" in md and "**FAIL** — **Entropy collapse**" in md
    _, everything, _ = _cli("diagnose", "--all", str(sick))
    assert "NaN or Inf in the logs" in everything


def test_skipped_checks_are_counted_and_listed_with_all(tmp_path: Path) -> None:
    f = tmp_path / "few.jsonl"
    f.write_text("".join(f'{{"step":{i},"data":{{"actor/grad_norm":0.5}}}}\n' for i in range(1, 30)))
    _, text, _ = _cli("diagnose", str(f))
    # one line per layer with its counts, no check named
    assert "· L6 reasoning       3 skipped\n" in text and "--all lists each passed and skipped check" in text
    assert "needs actor/entropy" not in text
    _, everything, _ = _cli("diagnose", "--all", str(f))
    assert "needs actor/entropy, which this run did not log" in everything


def test_needs_a_path() -> None:
    code, _, err = _cli("diagnose")
    assert code == 2 and err == "rlvitals: diagnose needs at least one PATH (or --example)\n"


def test_example_runs() -> None:
    code, out, _ = _cli("diagnose", "--example", "--fail-on", "fail")
    assert code == 1 and "Entropy collapse" in out


def test_list_checks() -> None:
    code, out, _ = _cli("diagnose", "--list-checks")
    assert code == 0 and "grad_norm_spike" in out and "ratio=10.0" in out


def test_config_overrides(sick: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "rlvitals.toml"
    cfg.write_text("[checks.entropy_collapse]\nenabled = false\n[checks.grad_norm_spike]\nmax_status = 'ok'\n")
    code, out, _ = _cli("diagnose", "--json", "--fail-on", "warn", "--config", str(cfg), str(sick))
    run = orjson.loads(out)["runs"][0]
    statuses = {f["check"]: f["status"] for f in run["findings"]}
    assert statuses["entropy_collapse"] == "skipped" and statuses["grad_norm_spike"] == "ok"


@pytest.mark.parametrize(("text", "message"), [
    ("[checks.entropy_colapse]\nenabled = false\n",
     r"unknown check 'entropy_colapse'; did you mean 'entropy_collapse'\?"),
    ("[checks.grad_norm_spike]\nratoi = 3\n",
     r"\[checks.grad_norm_spike\] has no setting 'ratoi'; did you mean 'ratio'\? \(valid: enabled, max_status, "),
    ("[checks.grad_norm_spike]\nratio = 'high'\n",
     r"\[checks.grad_norm_spike\] ratio = 'high': expected a number like 10.0"),
    ("[checks.grad_norm_spike]\nenabled = 1\n", r"enabled = 1: expected true or false"),
    ("[checks.grad_norm_spike]\nwindow = 7.5\n", r"window = 7.5: expected a whole number like 50"),
    ("[checks.grad_norm_spike]\nmax_status = 'bad'\n", r"max_status = 'bad': expected one of ok, note, warn, fail"),
    ("[thresholds]\nx = 1\n", r"unknown section 'thresholds'; the only section is \[checks.<id>\]"),
    ("[checks\n", r"not valid TOML"),
    ("[checks]\ngrad_norm_spike = 3\n", r"\[checks.grad_norm_spike\] must be a table of settings"),
])
def test_config_errors(sick: Path, tmp_path: Path, text: str, message: str) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    code, out, err = _cli("diagnose", "--config", str(cfg), str(sick))
    assert code == 2 and out == ""
    assert err.startswith(f"rlvitals: {cfg}: ")
    assert __import__("re").search(message, err), err


def test_missing_config_file(sick: Path, tmp_path: Path) -> None:
    code, _, err = _cli("diagnose", "--config", str(tmp_path / "nope.toml"), str(sick))
    assert code == 2 and err == f"rlvitals: {tmp_path / 'nope.toml'}: no such config file\n"


def _rollout_dump(folder: Path, bad_lines: int = 1) -> Path:
    """A veRL dump of 2 prompts × 4 samples at step 1, a non-JSON line after the third and, with
    ``bad_lines`` > 1, that many more at the end."""
    folder.mkdir()
    lines = [orjson.dumps({"input": f"Q{q}: {q}+{q}?", "output": f"#### {i}", "score": float(i % 2), "step": 1,
                           "acc": bool(i % 2), "pred": str(i)}).decode() for q in range(2) for i in range(4)]
    lines.insert(3, "not json")
    lines += ["{"] * (bad_lines - 1)
    (folder / "1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / "1.jsonl"


def test_rollouts_skips_and_gaps_are_shown_under_the_run(sick: Path, tmp_path: Path) -> None:
    dump = _rollout_dump(tmp_path / "dump")
    code, out, err = _cli("diagnose", "--rollouts", str(tmp_path / "dump"), str(sick))
    assert code == 0, err
    where = tmp_path / "dump"
    block = " ".join(out[out.index(f"rollouts {where}:"):].split())  # rich wraps lines at the width
    assert block == (
        f"rollouts {where}: 1 line(s) or row(s) skipped, 10 metric families or keys not computed "
        f"skipped {dump}:4: invalid JSON (Expecting value at column 1); the line was skipped "
        "not computed step_groups; id_ood; sources; tokens; segment_entropy; diversity/action_edit_distance; "
        "diversity/state_coverage; rollout/truncation_share; prompt/difficulty/{easy,medium,hard}/adv_share; "
        f"rollout/tool_calls/at_cap (rlvitals rollouts {where} says why) "
        "note the rollouts carry no token counts: lengths are counted in characters")
    assert out.index("verdict:") < out.index("rollouts ")  # under the run


def test_rollouts_object_in_the_json(sick: Path, tmp_path: Path) -> None:
    dump = _rollout_dump(tmp_path / "dump", bad_lines=3)
    code, out, err = _cli("diagnose", "--json", "--rollouts", str(tmp_path / "dump"), str(sick))
    assert code == 0, err
    rollouts = orjson.loads(out)["runs"][0]["rollouts"]
    assert rollouts["path"] == str(tmp_path / "dump")
    assert rollouts["skipped"] == {"count": 3, "reasons": [
        f"{dump}:4: invalid JSON (Expecting value at column 1); the line was skipped",
        f"{dump}:10: invalid JSON (Expecting property name enclosed in double quotes at column 2); the line was "
        "skipped",
        f"{dump}:11: invalid JSON (Expecting property name enclosed in double quotes at column 2); the line was "
        "skipped"]}
    assert rollouts["not_computed"][0].startswith("step_groups: step-level groups need the rollout column(s) "
                                                  "['states']")
    assert len(rollouts["not_computed"]) == 10 and rollouts["notes"] == [
        "the rollouts carry no token counts: lengths are counted in characters"]
    # without --rollouts the run object has no such key
    assert "rollouts" not in orjson.loads(_cli("diagnose", "--json", str(sick))[1])["runs"][0]


def test_each_run_gets_its_own_rollouts(sick: Path, healthy: Path, tmp_path: Path) -> None:
    _rollout_dump(tmp_path / "dump")
    code, out, err = _cli("diagnose", "--json", "--rollouts", str(tmp_path / "dump"), "--rollouts", "-",
                          str(sick), str(healthy))
    assert code == 0, err
    first, second = orjson.loads(out)["runs"]
    assert first["path"] == str(sick) and first["rollouts"]["path"] == str(tmp_path / "dump")
    assert second["path"] == str(healthy) and "rollouts" not in second


def test_one_rollouts_folder_for_two_runs_is_refused(sick: Path, healthy: Path, tmp_path: Path) -> None:
    _rollout_dump(tmp_path / "dump")
    code, out, err = _cli("diagnose", "--rollouts", str(tmp_path / "dump"), str(sick), str(healthy))
    assert code == 2 and out == ""
    assert err == ("rlvitals: 2 runs given but 1 --rollouts; the rollouts of one run are not another's: give "
                   "--rollouts once per RUN, in the order of the runs ('-' for a run without rollouts)\n")
