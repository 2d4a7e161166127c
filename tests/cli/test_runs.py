"""``rlvitals diagnose --rollouts DIR --verbose``: every rollout metric not computed with its whole reason
under the run, as ``rlvitals rollouts --verbose`` lists them; without ``--verbose`` their names on one line."""

from __future__ import annotations

import io
from pathlib import Path

import orjson

import rlvitals
from rlvitals.cli import main
from rlvitals.words import in_lang, translated


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def _dump(folder: Path) -> Path:
    """A veRL dump of 2 prompts × 4 samples at step 1 with a non-JSON line."""
    folder.mkdir()
    lines = [orjson.dumps({"input": f"Q{q}: {q}+{q}?", "output": f"#### {i}", "score": float(i % 2), "step": 1})
             .decode() for q in range(2) for i in range(4)]
    (folder / "1.jsonl").write_text("\n".join([*lines[:3], "not json", *lines[3:]]) + "\n", encoding="utf-8")
    return folder


def _log(folder: Path) -> Path:
    from rlvitals.synthetic.simulate import Scenario, jsonl_lines

    log = folder / "run.jsonl"
    log.write_bytes(b"".join(line + b"\n" for line in jsonl_lines(Scenario(steps=40, collapse_at=None))))
    return log


def test_diagnose_verbose_lists_every_rollout_metric_not_computed_with_its_reason(tmp_path: Path) -> None:
    dump, log = _dump(tmp_path / "dump"), _log(tmp_path)
    reasons = orjson.loads(_cli("diagnose", "--json", "--rollouts", str(dump), str(log))[1])[
        "runs"][0]["rollouts"]["not_computed"]
    assert len(reasons) > 3
    code, out, err = _cli("diagnose", "--verbose", "--rollouts", str(dump), str(log))
    assert code == 0 and err == "", err
    block = out[out.index(f"rollouts {dump}:"):]
    assert f"  not computed ({len(reasons)}):" in block and "says why" not in block
    flat = " ".join(block.split())  # rich wraps an English reason at the width, as rollouts --verbose does
    at = [flat.index(" ".join(reason.split())) for reason in reasons]  # each whole, in the analysis' order
    assert at == sorted(at)
    assert all(any(line == f"    {reason[:20]}" or line.startswith(f"    {reason[:20]}") for line in block.splitlines())
               for reason in reasons)  # each starts a line of its own
    # the reader's skip and its note are still there
    assert "skipped" in block and f"{dump / '1.jsonl'}:4: invalid JSON" in flat  # wrapped at the width
    code, out, _ = _cli("diagnose", "--rollouts", str(dump), str(log))
    folded = " ".join(out[out.index("  not computed "):].split())
    names = "; ".join(reason.split(": ", 1)[0] for reason in reasons)
    assert code == 0 and folded.startswith(f"not computed {names} (rlvitals rollouts {dump} says why)")
    assert "not computed (" not in out and not any(" ".join(r.split()) in " ".join(out.split()) for r in reasons)


def test_diagnose_verbose_in_chinese(tmp_path: Path) -> None:
    dump, log = _dump(tmp_path / "dump"), _log(tmp_path)
    reasons = orjson.loads(_cli("diagnose", "--json", "--rollouts", str(dump), str(log))[1])[
        "runs"][0]["rollouts"]["not_computed"]
    code, out, err = _cli("diagnose", "--lang", "zh", "--verbose", "--rollouts", str(dump), str(log))
    assert code == 0 and err == "", err
    assert f"  没有算出的指标（{len(reasons)} 项）：" in out and "原因见" not in out
    said = rlvitals.analyze_rollouts(dump).skipped
    assert said == reasons and all(translated(r) for r in said)  # every reason has its Chinese, and that is shown
    assert all(f"    {in_lang(reason, 'zh')}" in out.splitlines() for reason in said)


def test_diagnose_verbose_without_rollouts_is_refused(tmp_path: Path) -> None:
    code, out, err = _cli("diagnose", "--verbose", str(_log(tmp_path)))
    assert code == 2 and out == ""
    assert err == ("rlvitals: diagnose --verbose lists the rollout metrics that could not be computed, but no "
                   "--rollouts DIR was given; add --rollouts DIR (the rollout dumps of the run) or drop --verbose\n")
