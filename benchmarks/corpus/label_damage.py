"""The damage step of each corpus run, from the raw numbers (json, csv, re, ast, struct; never rlvitals).

A run is damaged where its outcome visibly falls or where it dies; the step is written into its labels.toml
as ``[damage]`` (README.md says what the table holds). ``benchmarks/live_eval.py`` reads it for the lead time
of the watcher's alerts. The rule, the same for every run:

- **reward falls**: the training reward (``reward``, ``objective/scores``, ``critic/score/mean``, a notebook
  table's ``reward`` column, MiniMind's ``Reward``, DeepSpeed-Chat's ``average reward score``, a hand-written
  trainer's running ``acc``) is averaged over the records of the last ``WINDOW`` steps (a tenth of the run's
  steps for a run shorter than ten windows; at least the record itself). The damage is the first record at
  which that mean is below its best so far by more than each of: ``FALL`` of that best (for a reward that never
  goes below 0), ``FALL`` of the reward's range over the run, and ``SIGMAS`` standard errors of the mean (the
  record-to-record noise before it: the root mean square of successive differences over √2, divided by the
  square root of the records averaged) — and stays below that bar at every later record, with at least
  ``HELD`` records below it (one low last record is a dip, not a fall). Values compare to the 4 significant
  digits a console prints.
- **validation falls**: the same for the validation score (``val-core/…``, ``val/test_score/…``,
  ``eval_reward``, ``eval_accuracy``, ``eval_rewards/accuracies``, ``eval_mean_token_accuracy``; else
  ``eval_loss``, where higher is worse), evaluation by evaluation (no average).
- **death**: the log ends in a traceback, an out-of-memory error, a death signal, ``Killed`` or a full disk
  with no training record after it, after at least one training record: the damage is the step of the last
  training record before it. (A run that dies before its first step has nothing an alert could come before.)

The earliest of the three is the damage. A console's dicts carry no step: record ``i`` of a TRL console is
step ``i × last_step / records`` of its label (the logging interval its label read from the numbers).

    python benchmarks/corpus/label_damage.py            # what the rule finds, run by run
    python benchmarks/corpus/label_damage.py --write    # write [damage] into the labels (and remove stale ones)
    python benchmarks/corpus/label_damage.py --check    # exit 1 when a label's [damage] is not what the rule finds
"""

from __future__ import annotations

import ast
import csv
import json
import math
import re
import struct
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
#: where a label's ``input = "fixture:<name>"`` lies: the real public logs the tests read
FIXTURES = HERE.parents[1] / "tests" / "fixtures" / "real"
WINDOW = 20
FALL = 0.2
HELD = 2
SIGMAS = 4
REWARD_KEYS = ("reward", "objective/scores", "critic/score/mean", "train/reward")
VAL_KEYS = ("eval_reward", "eval_accuracy", "eval_rewards/accuracies", "eval_mean_token_accuracy")
DEATH = re.compile(r"Traceback \(most recent call last\)|CUDA out of memory|OutOfMemoryError|RESOURCE_EXHAUSTED"
                   r"|Received \d+ death signal|^Killed\s*$|No space left on device|KeyboardInterrupt", re.M)


class Series:
    """What the rule reads from one run: reward and validation points ``(step, value)``, and the death."""

    def __init__(self) -> None:
        self.reward: list[tuple[int, float]] = []
        self.reward_key = ""
        self.val: list[tuple[int, float]] = []
        self.val_key = ""
        self.lower_is_better = False
        self.death: tuple[int, str] | None = None  # (last training step before it, what it was)
        self.last_step = 0


# -- reading ----------------------------------------------------------------------------------------------


def _num(x: object) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str):
        try:
            return float(x.strip())
        except ValueError:
            return None
    return None


def _take(out: Series, rows: list[tuple[int, dict[str, object]]]) -> None:
    """Reward and validation from rows of ``(step, {key: value})``."""
    keys = {k for _, row in rows for k in row}
    out.reward_key = next((k for k in REWARD_KEYS if k in keys), "")
    val = sorted(k for k in keys if k.startswith(("val-core/", "val/test_score/")))
    val = [k for k in val if "mean@" in k or k.startswith("val/")] or val
    out.val_key = val[0] if val else next((k for k in VAL_KEYS if k in keys), "")
    if not out.val_key and "eval_loss" in keys:
        out.val_key, out.lower_is_better = "eval_loss", True
    for step, row in rows:
        for key, series in ((out.reward_key, out.reward), (out.val_key, out.val)):
            value = _num(row.get(key)) if key else None
            if value is not None and value == value:
                series.append((step, value))
    out.last_step = max([s for s, _ in rows], default=0)


def _death(out: Series, text: str, record_at: list[tuple[int, int]]) -> None:
    """``record_at``: (offset in ``text``, step) of each training record."""
    marks = list(DEATH.finditer(text))
    if not marks or not record_at:
        return
    last = marks[-1]
    # the first marker of the last stretch of markers with no record after it
    after = [m for m in marks if m.start() > max(o for o, _ in record_at)]
    if not after:
        return
    before = [s for o, s in record_at if o < after[0].start()]
    if before:
        out.death = (before[-1], last.group(0).strip())


def read_trl_state(path: Path) -> Series:
    data = json.loads(path.read_text(encoding="utf-8"))
    history = data["log_history"] if isinstance(data, dict) else data
    out = Series()
    _take(out, [(int(e["step"]), e) for e in history if isinstance(e.get("step"), (int, float))])
    return out


def read_trl_console(path: Path, label: dict) -> Series:
    text = path.read_text(encoding="utf-8", errors="replace")
    every = max(1, int(label["run"]["last_step"]) // max(1, int(label["run"]["records"])))
    rows, at, n = [], [], 0
    for m in re.finditer(r"\{'[^{}]*\}", text):
        try:
            row = ast.literal_eval(m.group(0))
        except (ValueError, SyntaxError):
            continue
        if not isinstance(row, dict) or "train_runtime" in row:
            continue
        if "loss" in row and not any(str(k).startswith("eval_") for k in row):
            n += 1
            at.append((m.start(), n * every))
        rows.append((n * every, row))
    out = Series()
    _take(out, rows)
    _death(out, text, at)
    return out


def read_verl_console(path: Path) -> Series:
    text = re.sub(r"\x1b\[[0-9;]*m", "", path.read_text(encoding="utf-8", errors="replace"))
    rows, at = [], []
    for m in re.finditer(r"step:(\d+) - (.*)", text):
        row = {k: v for k, v in re.findall(r"([\w/@.\-]+):(?:np\.float64\()?([-+\w.]+)\)?(?: - |$)", m.group(2))}
        rows.append((int(m.group(1)), row))
        if any(k.startswith(("actor/", "critic/")) for k in row):
            at.append((m.start(), int(m.group(1))))
    out = Series()
    _take(out, rows)
    _death(out, text, at)
    return out


def read_csv(path: Path) -> Series:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = [(int(float(r["Step"])), dict(r)) for r in csv.DictReader(fh) if r.get("Step")]
    out = Series()
    _take(out, rows)
    return out


def read_notebook(path: Path) -> Series:
    """The last HTML training table (a ``Step`` header) in the notebook's outputs."""
    table = ""
    for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
        for output in cell.get("outputs", []):
            html = output.get("data", {}).get("text/html", "")
            html = "".join(html) if isinstance(html, list) else html
            if "<table" in html and re.search(r"<th[^>]*>\s*Step\s*</th>", html):
                table = html
    out = Series()
    if table:
        head = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", table, re.S)]
        rows = []
        for tr in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[-1], re.S):
            cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
            row = dict(zip(head, cells, strict=False))
            if row.get("Step", "").isdigit():
                rows.append((int(row["Step"]), row))
        _take(out, rows)
    return out


def read_regex(path: Path, pattern: str, key: str) -> Series:
    """A console with one line per record: ``pattern``'s groups are (step, reward); ``key`` names the reward."""
    text = path.read_text(encoding="utf-8", errors="replace")
    rows, at = [], []
    for i, m in enumerate(re.finditer(pattern, text, re.M)):
        step = int(m.group(1)) if m.group(1) else i
        rows.append((step, {key: m.group(2).rstrip(",")}))
        at.append((m.start(), step))
    out = Series()
    out.reward_key = key
    out.reward = [(s, v) for s, r in rows if (v := _num(r[key])) is not None]
    out.last_step = max([s for s, _ in rows], default=0)
    _death(out, text, at)
    return out


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def _fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """A protobuf message's fields: (number, wire type, value)."""
    out, i = [], 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        out.append((number, wire, value))
    return out


def read_tensorboard(folder: Path) -> Series:
    """TFRecord framing (length, crc, data, crc); Event.step = 2, Event.summary = 5; Summary.value = 1 with
    tag = 1 and simple_value = 2 (or a one-float tensor = 8, float_val = 5)."""
    rows: dict[int, dict[str, object]] = {}
    for path in sorted(p for p in folder.rglob("*tfevents*") if p.is_file()):
        data, at = path.read_bytes(), 0
        while at + 12 <= len(data):
            (length,) = struct.unpack("<Q", data[at:at + 8])
            event = _fields(data[at + 12:at + 12 + length])
            at += 16 + length
            step = next((v for n, w, v in event if n == 2 and w == 0), 0)
            for n, _, summary in event:
                if n != 5:
                    continue
                for m, _, value in _fields(summary):
                    if m != 1:
                        continue
                    parts = {k: v for k, _, v in _fields(value)}
                    number = None
                    if 2 in parts:
                        number = struct.unpack("<f", parts[2])[0]
                    elif 8 in parts:
                        floats = [v for k, w, v in _fields(parts[8]) if k == 5]
                        if floats:
                            number = struct.unpack("<f", floats[0][:4])[0]
                    if number is not None:
                        rows.setdefault(int(step), {})[parts[1].decode()] = number
    out = Series()
    _take(out, sorted(rows.items()))
    return out


def read_wandb(folder: Path) -> Series:
    """The .wandb record log: 32 KiB blocks (the first opens with a 7-byte header), records of a 7-byte header
    (crc 4, length 2, type 1: full, first, middle, last); Record.history = 2, HistoryRecord.item = 1 (key = 1 or
    the parts of nested_key = 2, value_json = 16), HistoryRecord.step = 2 (num = 1)."""
    data = next(folder.glob("*.wandb")).read_bytes()
    records, part, at = [], b"", 7
    while at + 7 <= len(data):
        room = 32768 - at % 32768
        if room < 7:
            at += room
            continue
        length, kind = struct.unpack("<HB", data[at + 4:at + 7])
        body = data[at + 7:at + 7 + length]
        at += 7 + length
        if kind == 0 and length == 0:
            at += 32768 - at % 32768 if at % 32768 else 0
            continue
        part = body if kind in (1, 2) else part + body
        if kind in (1, 4):
            records.append(part)
    rows = []
    for record in records:
        for n, _, history in _fields(record):
            if n != 2:
                continue
            row: dict[str, object] = {}
            step = None
            for m, _, value in _fields(history):
                if m == 1:
                    item = _fields(value)
                    key = "/".join(v.decode() for k, _, v in item if k in (1, 2))
                    raw = next((v for k, _, v in item if k == 16), b"null")
                    try:
                        row[key] = json.loads(raw)
                    except ValueError:
                        continue
                elif m == 2:
                    step = next((v for k, w, v in _fields(value) if k == 1), 0)
            if step is None:
                step = row.get("_step", 0)
            rows.append((int(step), row))
    out = Series()
    _take(out, rows)
    logs = list(folder.rglob("output.log"))
    if logs:
        text = logs[0].read_text(encoding="utf-8", errors="replace")
        at_steps = [(m.start(), int(m.group(1))) for m in re.finditer(r"step:(\d+) - ", text)]
        _death(out, text, at_steps)
    return out


def read(folder: Path, label: dict) -> Series | None:
    name = str(label["run"]["input"])
    path = FIXTURES / name.removeprefix("fixture:") if name.startswith("fixture:") else folder / name
    fmt = label["run"]["format"]
    if fmt == "trl-state":
        return read_trl_state(path)
    if fmt == "trl-console":
        return read_trl_console(path, label)
    if fmt == "verl-console":
        return read_verl_console(path)
    if fmt == "csv":
        return read_csv(path)
    if fmt == "notebook":
        return read_notebook(path)
    if fmt == "tensorboard":
        return read_tensorboard(path)
    if fmt == "wandb-offline":
        return read_wandb(path)
    if fmt == "minimind-console":
        return read_regex(path, r"\((\d+)/\d+\), Reward: (\S+)", "Reward")
    if fmt == "deepspeed-chat-console":
        return read_regex(path, r"^()average reward score: (\S+)", "average reward score")
    if fmt == "posttraining-llm-small-console":
        return read_regex(path, r"^\[step (\d+)\] avg_loss=\S+ acc=(\S+)", "acc")
    return None


# -- the rule ---------------------------------------------------------------------------------------------


def fall(points: list[tuple[int, float]], width: int, lower_is_better: bool = False) -> tuple[int, float, float] | None:
    """The first point whose mean over the last ``width`` steps (the point alone for 0) is below the best such
    mean so far by ``FALL`` of the best (unless the series goes below 0), by ``FALL`` of the series' range and by
    ``SIGMAS`` standard errors of that mean (the point-to-point noise before it: the root mean square of successive
    differences over √2), and stays below that bar to the end, with ``HELD`` records below it there (one low record
    is a dip, not a fall): (step, best, mean)."""
    if len(points) < HELD:
        return None
    steps = [s for s, _ in points]
    raw = [(-v if lower_is_better else v) for _, v in points]
    means, counts, first = [], [], 0
    for i, step in enumerate(steps):  # the records of (step - width, step], and at least this one
        while first < i and steps[first] <= step - width:
            first += 1
        means.append(math.fsum(raw[first:i + 1]) / (i + 1 - first))
        counts.append(i + 1 - first)
    signed = min(raw) < 0
    span = max(raw) - min(raw)
    best = means[0]
    squares = 0.0  # of the successive differences before point i
    for i, mean in enumerate(means):
        best = max(best, mean)
        if i >= 2:
            squares += (raw[i - 1] - raw[i - 2]) ** 2
        noise = (squares / (2 * (i - 1))) ** 0.5 if i >= 2 else 0.0
        margin = max(FALL * span, 0.0 if signed else FALL * best, SIGMAS * noise / counts[i] ** 0.5)
        # "by more than", to the 4 significant digits a console prints: a mean at the bar has not fallen
        bar = best - margin * (1 + 1e-3)
        held = sum(r < bar for r in raw[i:]) >= HELD  # records, not only means: one low record is a dip
        if (signed or best > 0) and mean < bar and held and all(m < bar for m in means[i:]):
            sign = -1 if lower_is_better else 1
            return steps[i], sign * best, sign * mean
    return None


def damage(s: Series) -> dict[str, object] | None:
    found = []
    width = WINDOW if s.last_step >= 10 * WINDOW else max(1, s.last_step // 10)
    reward = fall(s.reward, width) if s.reward else None
    if reward is not None:
        found.append((reward[0], f"reward ({s.reward_key})",
                      f"the mean of {s.reward_key} over the last {width} steps is {reward[2]:.4g} at step "
                      f"{reward[0]}, below its best so far {reward[1]:.4g} by more than {FALL:.0%} and {SIGMAS} "
                      "standard errors, and stays below to the end"))
    val = fall(s.val, 0, s.lower_is_better) if s.val else None
    if val is not None:
        worse = "above" if s.lower_is_better else "below"
        found.append((val[0], f"validation ({s.val_key})",
                      f"{s.val_key} {val[2]:.4g} at step {val[0]}, {worse} its best so far {val[1]:.4g} by more than "
                      f"{FALL:.0%} and {SIGMAS} standard errors, and stays there to the end"))
    if s.death is not None:
        found.append((s.death[0], "death", f"the log ends in '{s.death[1][:60]}' after the training record of step "
                                           f"{s.death[0]}, with no record after it"))
    if not found:
        return None
    step, metric, why = min(found, key=lambda f: f[0])
    return {"step": int(step), "metric": metric, "why": why}


# -- the labels -------------------------------------------------------------------------------------------


def _toml(d: dict[str, object]) -> str:
    return ("[damage]\n" + f"step = {d['step']}\n" + f"metric = {json.dumps(d['metric'])}\n"
            + f"why = {json.dumps(d['why'], ensure_ascii=False)}\n")


def _without(text: str) -> str:
    """``text`` without its [damage] table (it is written last, so it runs to the end or the next table)."""
    return re.sub(r"\n*\[damage\]\n(?:(?!\[).*\n?)*", "\n", text).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    bad = 0
    for labels in sorted((HERE / "runs").glob("*/labels.toml")):
        label = tomllib.loads(labels.read_text(encoding="utf-8"))
        series = read(labels.parent, label)
        found = damage(series) if series is not None else None
        name = labels.parent.name
        if "--check" in args:
            if series is not None and label.get("damage") != found:
                print(f"{name}: labels.toml has {label.get('damage')}, the rule finds {found}")
                bad += 1
            continue
        if "--write" in args and series is not None and (found or "damage" in label):
            text = _without(labels.read_text(encoding="utf-8"))
            labels.write_text(text + ("\n" + _toml(found) if found else ""), encoding="utf-8")
        said = "not read" if series is None else "-" if found is None else f"{found['step']:>6} {found['metric']}"
        print(f"{name[:70]:<70} {said}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
