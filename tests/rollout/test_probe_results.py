"""rlvitals probe's results beside the rollouts are read as per-step rollout metrics, by every view."""

from __future__ import annotations

import io
import json
from pathlib import Path

import rlvitals
from rlvitals.cli import main
from rlvitals.rollout import PROBES_FILE, read_probe_results, read_rollouts
from rlvitals.rollout.readers import ColumnMap
from rlvitals.rollout.writers import write_verl_dump
from rlvitals.words import in_lang


def _dump(folder: Path, steps: tuple[int, ...] = (1, 2, 3)) -> Path:
    for step in steps:
        write_verl_dump([{"prompt": f"{q} + {q}?", "response": f"The answer is {2 * q if i else 0}.",
                          "score": float(i > 0), "target": str(2 * q)} for q in range(3) for i in range(2)],
                        folder, step=step)
    return folder


def _probes(folder: Path, lines: list[object]) -> Path:
    path = folder / PROBES_FILE
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


def _record(step: int, score: float, **more: float) -> dict[str, object]:
    return {"model": "ckpt", "step": step, "rollouts": 4, "reasoning/faithfulness": score, **more}


def test_probe_results_join_the_rollout_metrics_by_step(tmp_path: Path) -> None:
    folder = _dump(tmp_path / "dump")
    _probes(folder, [_record(1, 0.9, **{"reasoning/faithfulness/filler": 1.0}), _record(3, 0.5),
                     "not json", {"model": "ckpt", "step": "x", "reasoning/faithfulness": 0.2}])
    a = rlvitals.analyze_rollouts(folder)
    got = a.steps.select("step", "reasoning/faithfulness", "reasoning/faithfulness/filler", "pass@1").rows()
    assert got == [(1, 0.9, 1.0, 0.5), (2, None, None, 0.5), (3, 0.5, None, 0.5)]
    note = next(n for n in a.notes if "probe results" in n)
    assert note.startswith("probe results of ckpt: 8 rollouts probed at 2 steps, read from ")
    assert note.endswith("; 2 lines skipped")
    assert "在 2 个 step 上探测了 8 条 rollout" in in_lang(note, "zh")
    reasons = [n for n in a.notes if PROBES_FILE + ":" in n]
    assert [r.split(": ", 1)[1][:24] for r in reasons] == ["invalid JSON (Expecting ", "no whole 'step' ('x')"]
    assert "没有整数 'step'" in in_lang(reasons[1], "zh")
    assert set(a.series().columns) >= {"reasoning/faithfulness", "reasoning/faithfulness/filler"}


def test_a_probed_step_the_rollouts_do_not_have_gets_its_own_row(tmp_path: Path) -> None:
    folder = _dump(tmp_path / "dump", (1,))
    _probes(folder, [_record(5, 0.4)])
    a = rlvitals.analyze_rollouts(folder)
    assert a.steps.select("step", "reasoning/faithfulness").rows() == [(1, None), (5, 0.4)]


def test_a_re_probed_step_keeps_the_last_line(tmp_path: Path) -> None:
    path = _probes(tmp_path, [_record(2, 0.3), _record(2, 0.7)])
    found = read_probe_results(path)
    assert found.frame.rows() == [(2, 0.7)] and found.rollouts == 8 and found.models == ["ckpt"]


def test_the_generic_folder_reader_does_not_take_the_results_for_rollouts(tmp_path: Path) -> None:
    folder = tmp_path / "tables"
    folder.mkdir()
    (folder / "rollouts.jsonl").write_text(json.dumps({"q": "1+1", "r": "2", "s": 1.0, "t": 1}) + "\n",
                                           encoding="utf-8")
    _probes(folder, [_record(1, 0.6)])
    rs = read_rollouts(folder, columns=ColumnMap(prompt="q", response="r", score="s", step="t"))
    assert rs.table.height == 1 and [Path(f).name for f in rs.files] == ["rollouts.jsonl"]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def test_rollouts_json_carries_the_probe_metrics(tmp_path: Path) -> None:
    folder = _dump(tmp_path / "dump")
    _probes(folder, [_record(1, 0.9), _record(2, 0.8), _record(3, 0.7)])
    code, out, _ = _cli("rollouts", str(folder), "--json")
    assert code == 0
    steps = json.loads(out)["steps"]
    assert [s["metrics"].get("reasoning/faithfulness") for s in steps] == [0.9, 0.8, 0.7]


def _run_with_probes(tmp_path: Path) -> tuple[Path, Path]:
    folder = _dump(tmp_path / "dump", tuple(range(1, 9)))
    _probes(folder, [_record(s, v) for s, v in enumerate((0.8, 0.82, 0.79, 0.8, 0.62, 0.45, 0.4, 0.38), start=1)])
    log = tmp_path / "train.jsonl"
    log.write_text("".join(json.dumps({"step": s, "critic/score/mean": 0.2 + 0.05 * s, "actor/entropy": 0.5}) + "\n"
                           for s in range(1, 9)), encoding="utf-8")
    return log, folder


def test_diagnose_with_rollouts_judges_the_probed_faithfulness(tmp_path: Path) -> None:
    log, folder = _run_with_probes(tmp_path)
    code, out, err = _cli("diagnose", str(log), "--rollouts", str(folder), "--json")
    found = [f for f in json.loads(out)["runs"][0]["findings"] if f["check"] == "faithfulness"]
    trend = next(f for f in found if "fell" in f["message"]["en"])
    assert trend["status"] == "warn" and trend["onset_step"] == 6
    assert "critic/score/mean rose" in trend["message"]["en"]


def test_the_faithfulness_finding_reads_in_chinese(tmp_path: Path) -> None:
    log, folder = _run_with_probes(tmp_path)
    code, out, err = _cli("diagnose", str(log), "--rollouts", str(folder), "--lang", "zh")
    assert "step 1–8 间 faithfulness 从 0.81 降到 0.39" in out and "靠推理之外的东西挣来的" in out
