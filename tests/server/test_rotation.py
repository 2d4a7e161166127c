"""`serve --rotated-into DIR` / `--rotation-pattern REGEX`: the dashboard follows a log through its rotations as
`watch` does (the same follower, the same rules)."""

from __future__ import annotations

import io
from pathlib import Path

from rlvitals.cli import main
from rlvitals.server import run_id
from rlvitals.synthetic.simulate import Scenario
from server.test_app import workspace


def test_serve_follows_a_log_rotated_into_another_folder_when_told(tmp_path: Path) -> None:
    """`serve --rotated-into old`: a log moved into ``old/`` by logrotate's olddir between two looks loses no
    step; without the option the steps written before the move and read by nobody are lost (and said)."""
    import os

    from rlvitals.ingest.rotated import RotationRules
    from rlvitals.synthetic.simulate import jsonl_lines

    lines = [line + b"\n" for line in jsonl_lines(Scenario(steps=90))]

    def served(rules: RotationRules) -> list[int]:
        folder = tmp_path / ("told" if rules.into else "not-told")
        (folder / "old").mkdir(parents=True)
        log = folder / "run.jsonl"
        log.write_bytes(b"".join(lines[:40]))
        ws = workspace([log], folder / "s.sqlite", rotation=rules)
        ws.poll_once()
        with log.open("ab") as f:
            f.write(b"".join(lines[40:60]))  # written, then rotated before the next look
        os.rename(log, folder / "old" / "run.jsonl.1")
        log.write_bytes(b"".join(lines[60:]))
        ws.poll_once()
        ws.poll_once()
        steps = [int(s) for s in ws.get(run_id(str(log))).run.steps]  # type: ignore[union-attr]
        ws.close()
        return steps

    assert served(RotationRules.of(["old"])) == list(range(1, 91))
    assert served(RotationRules()) != list(range(1, 91))



def test_serve_refuses_a_rotation_pattern_that_does_not_compile(tmp_path: Path) -> None:
    err = io.StringIO()
    assert main(["serve", str(tmp_path / "run.jsonl"), "--rotation-pattern", "run.jsonl.("], io.StringIO(), err) == 2
    assert err.getvalue().startswith("rlvitals: --rotation-pattern 'run.jsonl.(': not a regular expression "
                                     "(missing ), unterminated subpattern at position 10)"), err.getvalue()
    out = io.StringIO()
    assert main(["serve", "--help"], out, io.StringIO()) == 0
    flat = " ".join(out.getvalue().split())
    assert "--rotated-into DIR" in flat and "--rotation-pattern REGEX" in flat
