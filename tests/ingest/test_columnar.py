"""The columnar read (a reader's ``columns``, one process or two) gives the Run the record read gives."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import orjson
import pytest
from conftest import REAL

from rlvitals.errors import RlvitalsError
from rlvitals.ingest import (
    Columns,
    Reader,
    Record,
    SkipLog,
    SourceMeta,
    columnar,
    find_reader,
    generic_jsonl,
    text,
    verl_console,
    verl_jsonl,
)
from rlvitals.run.builder import RunBuilder
from rlvitals.run.run import Run
from rlvitals.synthetic.simulate import Scenario, console_lines, jsonl_lines

REGRESSIONS = Path(__file__).parent / "regressions"
CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "corpus" / "runs"


def by_records(path: Path, reader: Reader) -> tuple[Run, SourceMeta]:
    meta = SourceMeta(format=reader.format, files=[str(path)])
    builder = RunBuilder(meta)
    for record in reader.read(path, meta, builder.skipped):
        builder.add(record)
    return builder.finish(str(path), final=True), meta


def by_columns(path: Path, reader: Reader, min_bytes: int) -> tuple[Run, SourceMeta]:
    meta = SourceMeta(format=reader.format, files=[str(path)])
    builder = RunBuilder(meta)
    assert reader.columns is not None
    builder.add_columns(reader.columns(path, meta, builder.skipped, min_bytes=min_bytes))
    return builder.finish(str(path), final=True), meta


def _bits(run: Run) -> dict[str, object]:
    """Everything a Run says, its numbers as bit patterns (NaN and null told apart)."""
    def frame(df: object) -> dict[str, object]:
        out: dict[str, object] = {}
        for col in df.get_columns():  # type: ignore[attr-defined]
            values = col.to_numpy()
            nulls = col.is_null().to_numpy()
            out[col.name] = (str(col.dtype), nulls.tolist(),
                             np.where(nulls, 0, values).astype(np.float64).view(np.uint64).tolist())
        return out

    return {
        "frame": frame(run.frame), "raw": frame(run.raw), "text": run.text, "notes": [str(n) for n in run.notes],
        "zh": [getattr(n, "zh", None) for n in run.notes], "skipped": (run.skipped.count, run.skipped.reasons),
        "config": run.config, "crash": run.crash, "bytes": run.bytes_read, "summary": run.summary,
        "framework": (run.framework, run.algorithm, run.framework_era), "unmapped": run.unmapped,
        "keys": sorted(run.key_map), "train": run.train_mask.tolist(),
        "validation": {k: frame(v) for k, v in run.validation.items()},
        "wall": None if run.wall is None else (run.wall.seconds.view(np.uint64).tolist(), run.wall.source,
                                               run.wall.epoch, run.wall.started),
    }


def assert_same(path: Path) -> None:
    """The record read, the one-process columnar read and the two-process one agree in every figure."""
    reader = find_reader(path)
    try:
        want, want_meta = by_records(path, reader)
    except RlvitalsError as exc:  # a file that cannot be read: the columnar read says the same
        with pytest.raises(type(exc)) as got:
            by_columns(path, reader, 0)
        assert (str(got.value), got.value.text("zh")) == (str(exc), exc.text("zh"))
        return
    full = columnar.SEGMENT_VALUES
    for min_bytes, values in ((1 << 62, full), (0, full), (0, 50), (1 << 62, 1)):
        chunk = text.CHUNK if values == full else min(text.CHUNK, 4096)
        with mock.patch.object(columnar, "SEGMENT_VALUES", values), mock.patch.object(text, "CHUNK", chunk):
            got, got_meta = by_columns(path, reader, min_bytes)  # small segments, each taken alone
        assert _bits(got) == _bits(want), (path, min_bytes, values)
        assert (got_meta.crash, got_meta.crash_scanned, got_meta.config) == (want_meta.crash, want_meta.crash_scanned,
                                                                             want_meta.config)


def _logs(folder: Path, readers: tuple[str, ...]) -> list[Path]:
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.stat().st_size and not path.name.endswith((".txt", ".md")):
            try:
                fmt = find_reader(path).format
            except Exception:  # noqa: BLE001 - a file no reader takes is not this test's
                continue
            if fmt in readers:
                found.append(path)
    return found


FORMATS = ("verl-jsonl", "verl-console", "jsonl", "trl-state")
LOGS = _logs(REAL, FORMATS) + _logs(REGRESSIONS, FORMATS) + _logs(CORPUS, FORMATS)


@pytest.mark.parametrize("path", LOGS, ids=[p.name[:60] for p in LOGS])
def test_real_logs_read_the_same(path: Path) -> None:
    assert_same(path)


def test_real_logs_were_found() -> None:
    assert sum(find_reader(p).format == "verl-console" for p in LOGS) >= 5


def _jsonl(tmp_path: Path, bad: list[bytes], steps: int = 400, bom: bool = True, cut_end: bool = True) -> Path:
    """A veRL JSONL log with ``bad`` lines placed in its first and in its second half."""
    lines = list(jsonl_lines(Scenario(steps=steps, val_every=7)))
    for at in (steps // 5, steps // 2 + steps // 5):
        lines[at:at] = bad
    body = b"\n".join(lines) + b"\n"
    if cut_end:
        body += b'{"step": 99999, "data": {"actor/pg_loss": 0.'
    path = tmp_path / "run.jsonl"
    path.write_bytes((text.BOM if bom else b"") + body)
    return path


BAD_JSONL = [
    b"not json at all",
    b"",
    b"   ",
    b"[1, 2, 3]",
    b"null",
    b'{"step": "7", "data": {"a": 1.0}}',
    b'{"step": 3.0, "data": {"actor/pg_loss": 0.25}}',
    b'{"step": 1e400, "data": {"a": 1.0}}',
    b'{"step": 5, "data": [1, 2]}',
    b'{"step": 18446744073709551616, "data": {"a": 1.0}}',
    b'{"step": 12, "data": {"actor/pg_loss": null, "actor/entropy": 0.5}}',
    b'{"step": 13, "data": {"resize/mode": "schedule", "actor/entropy": 0.4}}',
    b'{"step": 14, "data": {"actor/entropy": 1' + b"0" * 400 + b"}}",
    b'{"step": 15, "data": {"actor/entropy": NaN, "x": Infinity}}',
    b'{"step": 16, "data": {"bad\\u001b[2Jkey": 1.0}}',
    b'{"step": 17, "data": {"lone\\ud800": 1.0}}',
    b'{"step": 18, "data": {"actor/entropy": true, "table": [1, 2], "nested": {"a": 1}}}',
    b'{"step": 19, "data": {}}',
    b'{"step": 20, "data": {"actor/entropy": 0.3}}\r',
    b'{"step": 21, "data": {"actor/entropy": "caf\xe9"}}',
    b'{"step": 22, "data": {"actor/entropy": 0.2}',
    b'{"step": 3, "data": {"actor/pg_loss": 0.5}}',
]


def test_jsonl_with_bad_lines_in_each_half(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, BAD_JSONL)
    run, _ = by_records(path, verl_jsonl.READER)
    assert run.skipped.count > 2 * 10 and any(":1:" in r or "run.jsonl:" in r for r in run.skipped.reasons)
    assert_same(path)


def test_jsonl_skip_reasons_name_lines_of_the_second_half(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [b"not json", b'{"step": "x", "data": {}}'], bom=False, cut_end=False)
    run, _ = by_columns(path, verl_jsonl.READER, 0)
    lines = path.read_bytes().split(b"\n")
    bad = [n for n, line in enumerate(lines, 1) if line in (b"not json", b'{"step": "x", "data": {}}')]
    assert len(bad) == 4 and bad[-1] > len(lines) // 2
    assert [r.split(": ", 1)[0] for r in run.skipped.reasons] == [f"{path}:{n}" for n in bad]


def test_jsonl_steps_out_of_order_and_logged_again(tmp_path: Path) -> None:
    lines = [orjson.dumps({"step": s, "data": {"a": float(s), "b": 2.0 * s}}) for s in (5, 6, 7, 3, 6, 8, 1)]
    lines[4] = orjson.dumps({"step": 6, "data": {"a": 60.0}})
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(lines * 40) + b"\n")
    run, _ = by_columns(path, verl_jsonl.READER, 0)
    assert run.frame["step"].to_list() == [1, 3, 5, 6, 7, 8]
    assert any("logged twice" in n for n in run.notes)
    assert_same(path)


def test_jsonl_over_long_lines_cut_where_the_whole_read_cuts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text, "CHUNK", 256)
    monkeypatch.setattr(text, "MAX_LINE", 300)
    long = b'{"step": 4, "data": {"a": ' + b"1" * 900 + b"}}"
    lines = [orjson.dumps({"step": s, "data": {"a": s * 0.5}}) for s in range(1, 200)]
    lines[30:30] = [long]
    lines[150:150] = [long, long]
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    run, _ = by_records(path, verl_jsonl.READER)
    assert sum("longer than 300 bytes" in n for n in run.notes) >= 3
    split_point = columnar.split_point
    for mid in range(200, path.stat().st_size, 997):  # the second half starting anywhere
        monkeypatch.setattr(columnar, "split_point", lambda p, size, mid=mid: split_point(p, 2 * mid))
        assert_same(path)


def test_generated_console_log_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    lines = list(console_lines(Scenario(steps=300)))
    lines[200] = lines[200].replace(" - actor/entropy:", " - actor/entropy:np.float64(").replace(
        " - actor/kl_loss", ") - actor/kl_loss", 1)
    lines[250:250] = ["step:77 - a:1 - a:2 - b:x", "step:78 - :1", "step:79 - ", "step:80 - k:np.float64(nan)",
                      "x" * 10 + "step:81 - a:1", "step:82 - " + "q" * 4084 + ":1"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert_same(path)


def test_console_traceback_in_the_first_half_is_followed_into_the_second(tmp_path: Path) -> None:
    lines = list(console_lines(Scenario(steps=200)))
    lines[150:150] = ["Traceback (most recent call last):", '  File "/x/verl/trainer/ppo.py", line 5, in h',
                      "KeyError: 'recovered from'"]
    lines[60:60] = ["Traceback (most recent call last):", '  File "/x/verl/trainer/ppo.py", line 3, in f',
                    "ValueError: early"]
    lines.append("(TaskRunner pid=1) Final validation metrics: {}")
    lines += ["Traceback (most recent call last):", '  File "/x/verl/trainer/ppo.py", line 9, in g',
              "RuntimeError: CUDA out of memory"]
    path = tmp_path / "run.log"
    path.write_text("\n".join(lines), encoding="utf-8")  # no newline at the end either
    run, meta = by_columns(path, verl_console.READER, 0)
    assert meta.crash is not None and meta.crash.kind == "oom" and meta.crash.causes == ()
    assert_same(path)


def test_console_split_before_the_first_step_line(tmp_path: Path) -> None:
    lines = list(console_lines(Scenario(steps=40)))
    noise = [f"(WorkerDict pid=1) loading shard {i}" for i in range(3000)]
    path = tmp_path / "run.log"
    path.write_text("\n".join(lines[:4] + noise + lines[4:]) + "\n", encoding="utf-8")
    assert_same(path)


def test_columns_take_a_record_through_the_check() -> None:
    cols, skips = Columns(), SkipLog()
    cols.add(Record(1 << 64, {"a": 1.0}, "run.log:1"), skips)
    cols.add(Record(2, {"a": 1, "b": "x"}, "run.log:2"), skips)
    cols.add(Record(3, {"a": 10 ** 400}, "run.log:3"), skips)
    assert skips.count == 2 and skips.reasons[0].startswith("run.log:1: step")
    assert cols.steps.tolist() == [2] and cols.blocks[("a",)].values.tolist() == [1.0] and cols.text == [(0, "b", "x")]
    cols.approve(("a",))
    cols.approve(("a", "c"))
    assert list(cols.fast) == [("a",)]


def test_nan_and_not_logged_stay_apart(tmp_path: Path) -> None:
    rows = [{"step": s, "data": {"a": None if s % 3 == 0 else s * 1.0, **({"v": 0.5} if s % 5 == 0 else {})}}
            for s in range(1, 61)]
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    run, _ = by_columns(path, verl_jsonl.READER, 0)
    a = run.raw["a"]
    assert a.null_count() == 0 and sum(math.isnan(x) for x in a.to_list()) == 20
    assert run.raw["v"].null_count() == 48
    assert_same(path)


def test_nulls_that_move_and_layouts_that_interleave_read_the_same(tmp_path: Path) -> None:
    """Nulls at the same places line after line, then elsewhere, then at some of those places only, then one
    that moves every line, and a text value where a null was; a second layout with its keys among the first's
    (more keys than the builder lays out at once), and from line 301 on a third, a new key among the others
    (segments of that layout alone): every figure as the record read gives it."""
    rows = []
    for s in range(1, 401):
        data: dict[str, object] = {f"k{j:02d}": s + j / 100 for j in range(40)}
        if s > 300:  # from here on a new key among the others: segments of this layout alone
            data = {**dict(list(data.items())[:11]), "new": -s, **dict(list(data.items())[11:])}
        for j in ((3, 17) if s < 120 else (5, 17, 39) if s < 200 and s % 10 else (17,) if s < 200 else (s % 40,)):
            data[f"k{j:02d}"] = None
        if s == 250:
            data["k05"] = "text"
        if s % 7 == 0:  # an evaluation: its keys come between the training keys, not after them
            mixed: dict[str, object] = {}
            for j, (key, value) in enumerate(data.items()):
                mixed[key] = value
                if j % 9 == 0:
                    mixed[f"val/{j}"] = s / 7
            data = mixed
        rows.append({"step": s, "data": data})
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    run, _ = by_columns(path, verl_jsonl.READER, 0)
    assert math.isnan(run.raw["k17"][0]) and math.isnan(run.raw["k03"][0]) and run.raw["k03"][130] == 131.03
    assert run.raw["val/9"].null_count() == 400 - 57 and run.text["k05"] == {250: "text"}
    assert run.raw["new"].null_count() == 300 and run.raw["new"][399] == -400 and run.raw["k11"][399] == 400.11
    assert run.raw["k05"][149] == 150.05 and math.isnan(run.raw["k05"][148])
    assert_same(path)


def _history(tmp_path: Path, name: str, rows: list[dict[str, object]], extra: list[bytes]) -> Path:
    lines = [orjson.dumps(r) for r in rows]
    lines[len(lines) // 3:len(lines) // 3] = extra
    lines[2 * len(lines) // 3:2 * len(lines) // 3] = extra
    path = tmp_path / name
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_wandb_history_reads_the_same(tmp_path: Path) -> None:
    rows: list[dict[str, object]] = []
    for s in range(1, 1500):
        row: dict[str, object] = {"train/global_step": s, "_step": 2 * s, "_timestamp": 1.7e9 + s, "_runtime": s * 1.0,
                                  "train/loss": 1.0 / s, "train/reward": {"mean": 0.1 * s, "std": None}}
        if s % 11 == 0:
            row["eval/acc"], row["epoch"] = 0.5, s / 100
        if s % 13 == 0:
            row["mode"] = "warmup"
        if s % 17 == 0:
            row["completions"] = {"_type": "table-file", "path": "x.json"}
        rows.append(row)
        if s % 19 == 0:
            rows.append({"_step": 2 * s + 1, "timing/x": 0.1})
    extra = [b"{bad", b'{"train/global_step": "x", "a": 1}', b'{"train/global_step": 3, "a": NaN}',
             b'{"train/global_step": 18446744073709551616, "a": 1.0}', b"[1]", b'{"other": 1.0}', b""]
    assert_same(_history(tmp_path, "wandb-history.jsonl", rows, extra))


def test_numbers_of_a_layout_seen_before_read_as_the_records_do(tmp_path: Path) -> None:
    """A layout whose metrics were all numbers is read at once (:func:`generic_jsonl.numbers`): ints and booleans
    as float() makes them; a row of that layout with a null, text, an object or an integer beyond float64 is read
    key by key; an evaluation row's epoch is dropped by its names. Figure for figure the records' read."""
    rows: list[dict[str, object]] = []
    for s in range(1, 1500):
        row: dict[str, object] = {"train/global_step": s, "_step": s, "_runtime": s * 1.0, "loss": 1.0 / s,
                                  "tokens": 1000 + s, "done": s % 3 == 0, "lr": 1e-5}
        if s % 7 == 0:
            row["lr"] = [None, "warm", {"a": 1.0}, {"_type": "table"}][s % 4]
        rows.append(row)
        if s % 50 == 0:
            rows.append({"train/global_step": s, "eval/acc": 0.5, "epoch": s / 100})
    huge = b'{"train/global_step": 1600, "_step": 1600, "_runtime": 1.0, "loss": 1, "tokens": 1' + b"0" * 400
    extra = [huge + b', "done": true, "lr": 0.1}', b'{"train/global_step": 3, "loss": NaN, "tokens": 2, "x": 1}']
    path = _history(tmp_path, "history.jsonl", rows, extra)
    assert_same(path)
    run, _ = by_columns(path, generic_jsonl.READER, 0)
    assert run.raw["tokens"].drop_nulls().max() == float("inf") and run.raw["done"].drop_nulls().max() == 1.0


def test_jsonl_without_a_step_key_reads_the_same(tmp_path: Path) -> None:
    rows: list[dict[str, object]] = [{"loss": 1.0 / s, "lr": 1e-5, "t": {"a": s}} for s in range(1, 1300)]
    path = _history(tmp_path, "metrics.jsonl", rows, [b"oops", b'{"loss": "high"}'])
    assert find_reader(path) is generic_jsonl.READER
    assert_same(path)


def test_a_worker_that_dies_has_its_half_read_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _jsonl(tmp_path, BAD_JSONL)
    want, _ = by_records(path, verl_jsonl.READER)
    monkeypatch.setattr(columnar, "_second", lambda *args: None)  # the worker leaves without a word
    got, _ = by_columns(path, verl_jsonl.READER, 0)
    assert _bits(got) == _bits(want)


def test_halves_splits_at_a_newline_past_the_middle(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"aaaa\nbb\ncccccc\n")
    assert columnar.split_point(path, 15) == 8
    path.write_bytes(b"aaaaaaaaaa\n")
    assert columnar.split_point(path, 11) is None


def test_a_long_columnar_load_gives_the_freed_heap_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rlvitals.run  # noqa: F401  # rlvitals.run.load is the function; its module is in sys.modules

    load_module = sys.modules["rlvitals.run.load"]
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(jsonl_lines(Scenario(steps=50))) + b"\n")
    calls: list[int] = []
    monkeypatch.setattr(load_module, "_give_back", lambda: calls.append(1))
    monkeypatch.setattr(load_module, "GIVE_BACK_ROWS", 51)
    load_module.load(path)
    assert calls == []
    monkeypatch.setattr(load_module, "GIVE_BACK_ROWS", 50)
    run = load_module.load(path)[0]
    assert calls == [1] and run.frame.height == 50
    monkeypatch.undo()
    load_module._give_back()  # the real one, where glibc has it and where it has not


def test_trainer_state_reads_the_same(tmp_path: Path) -> None:
    """A trainer_state.json with what HF Trainer and TRL write (logging steps, evaluations with the epoch,
    nested and null values, Python's NaN, the end summary) and what a damaged one holds (an entry that is not
    an object, a step that is not an integer, text values, a step logged twice and one out of order)."""
    rows: list[object] = []
    for step in range(1, 301):
        row: dict[str, object] = {"loss": 0.5 / step, "grad_norm": 1.0 + step % 7, "learning_rate": 1e-6 * step,
                                  "epoch": step / 300, "step": step, "rewards/accuracy_reward/mean": step % 5 / 4}
        if step % 50 == 0:
            row["completions/clipped_ratio"] = None
            row["kl"] = float("nan")
        if step % 60 == 0:
            rows.append({"eval_loss": 0.3, "eval_runtime": 4.5, "epoch": step / 300, "step": step})
        if step % 77 == 0:
            row["objective"] = {"mean": 0.25, "std": 0.5}
        rows.append(row)
    rows[40:40] = [[1, 2], {"loss": 0.1, "step": "12"}, {"loss": "n/a", "note": "warmup", "step": 13},
                   {"loss": 0.2, "step": 14}, {"loss": 0.3, "step": 3}]
    rows.append({"train_runtime": 1234.5, "train_loss": 0.11, "total_flos": 1e18, "epoch": 1.0, "step": 300})
    state = {"global_step": 300, "max_steps": 300, "log_history": rows, "best_metric": None}
    path = tmp_path / "trainer_state.json"
    body = orjson.dumps(state, option=orjson.OPT_INDENT_2)
    path.write_bytes(body.replace(b'null,\n      "kl"', b'NaN,\n      "kl"'))  # Python's json writes NaN
    assert find_reader(path).format == "trl-state"
    assert_same(path)
    run, _ = by_columns(path, find_reader(path), 0)
    assert run.skipped.count == 2 and run.summary["train_runtime"] == 1234.5
