"""``diagnose --rollouts``: a gradient spike names the extreme rollouts of its step
(docs/reading-rules.md#grad-norm-spike).

The log is real (the veRL Qwen2.5-0.5B run in tests/fixtures/real, whose gradient norm spikes at step 16); the
rollout dump beside it is constructed (tests/report/test_model.py ``write_dump``: step 16 holds one rollout with the
run's highest reward, in group 2)."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
from conftest import REAL
from report.test_model import QWEN, write_dump

from rlvitals.cli import main


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def test_a_spike_names_the_extreme_rollouts_of_its_step(tmp_path: Path) -> None:
    write_dump(tmp_path / "dump")
    code, out, err = _cli("diagnose", "--json", "--rollouts", str(tmp_path / "dump"), str(REAL / QWEN))
    assert code == 0, err
    (run,) = orjson.loads(out)["runs"]
    (spike,) = [f for f in run["findings"] if f["check"] == "grad_norm_spike" and f["status"] == "note"]
    assert spike["evidence"]["spike_steps"] == [16]
    named = {(r["step"], r["group"], r["sample"]): r for r in spike["evidence"]["spike_rollouts"]}
    top = named[(16, "2", 0)]
    assert top["reward"] == 5.0 and "max reward" in top["why"] and top["group_size"] == 4
    assert all(set(r) >= {"reward", "advantage", "group_z", "length", "group_mean", "why"} for r in named.values())


def test_without_rollouts_a_spike_names_none() -> None:
    code, out, err = _cli("diagnose", "--json", str(REAL / QWEN))
    (spike,) = [f for f in orjson.loads(out)["runs"][0]["findings"]
                if f["check"] == "grad_norm_spike" and f["status"] == "note"]
    assert "spike_rollouts" not in spike["evidence"]


def test_the_terminal_and_markdown_say_them_in_words_in_both_languages(tmp_path: Path) -> None:
    write_dump(tmp_path / "dump")
    for lang, line in (("en", "step 16, group 2, sample 0: "), ("zh", "第 16 步，组 2，样本 0：")):
        for form in ((), ("--markdown",)):
            code, out, err = _cli("diagnose", "--all", *form, "--lang", lang, "--rollouts", str(tmp_path / "dump"),
                                  str(REAL / QWEN))
            assert code == 0, err
            text = " ".join(out.split())  # rich wraps lines at the width
            assert line in text and ("highest reward" if lang == "en" else "reward 最高") in text, (lang, form)
            assert "{'step'" not in text and "spike_rollouts" not in text
