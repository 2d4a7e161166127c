"""veRL file-logger JSONL reader."""

from __future__ import annotations

import math
from pathlib import Path

import rlvitals
from rlvitals.ingest import find_reader


def _write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "gsm8k.jsonl"
    f.write_text(text, encoding="utf-8")
    return f


def test_reads_steps_nulls_strings_and_validation_only_lines(tmp_path: Path) -> None:
    f = _write(tmp_path, "\n".join([
        '{"step":0,"data":{"val-core/openai/gsm8k/acc/mean@1":0.0,"val-aux/num_turns/min":2}}',
        '{"step":1,"data":{"actor/pg_loss":0.12,"actor/entropy":null,"resize/mode":"schedule","tbl":[1,2]}}',
        '{"step":2.0,"data":{"actor/pg_loss":-0.5}}',
    ]) + "\n")
    assert find_reader(f).format == "verl-jsonl"
    run = rlvitals.load(f)[0]
    assert run.framework == "verl" and run.format == "verl-jsonl"
    assert run.train_steps.tolist() == [1, 2]
    assert run.raw["actor/pg_loss"].to_list() == [None, 0.12, -0.5]
    assert math.isnan(run.raw["actor/entropy"][1])
    assert run.text == {"resize/mode": {1: "schedule"}}
    assert "tbl" not in run.raw.columns
    assert run.skipped.count == 0


def test_bad_lines_are_counted_with_file_and_line(tmp_path: Path) -> None:
    f = _write(tmp_path, "\n".join([
        '{"step":1,"data":{"actor/pg_loss":0.1}}',
        'garbage',
        '{"step":"x","data":{"a":1}}',
        '[1,2]',
        '{"step":2,"data":{"actor/pg_loss":0.2}}',
        '{"step":3,"data":{"actor/pg_lo',
    ]))
    run = rlvitals.load(f)[0]
    assert run.train_steps.tolist() == [1, 2]
    assert run.skipped.count == 4
    reasons = run.skipped.reasons
    assert reasons[0] == f"{f}:2: invalid JSON (Expecting value at column 1); the line was skipped"
    assert reasons[1] == f"{f}:3: step 'x' is not an integer; the line was skipped"
    assert reasons[2] == f"{f}:4: expected {{\"step\": N, \"data\": {{...}}}}, got list; the line was skipped"
    assert reasons[3].startswith(f"{f}:6: invalid JSON (")
