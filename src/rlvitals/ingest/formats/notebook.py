"""Jupyter notebooks (``.ipynb``) that trained a model: the metrics their saved outputs hold.

Two places, whichever the notebook has:

* **The Trainer's training table.** In a notebook the HF Trainer (and TRL on top of it) draws
  its progress as HTML: a ``<progress>`` line (``[114/114 1:06:24, Epoch 2/3]``) and a
  ``<table>`` whose first column is ``Step``. Unsloth's version shows every training key
  (``Training Loss``, ``reward``, ``rewards / chosen`` — the spellings the catalog maps, as for a
  CSV copy of such a table). The Trainer's own version shows ``Training Loss`` and, when it
  evaluates, ``Validation Loss`` followed by the other evaluation metrics, title-cased
  (``Rewards/chosen``, ``Samples Per Second``): those are read back as ``eval_rewards/chosen``,
  ``eval_samples_per_second``. ``No log`` and empty cells are "not logged". A cell that redrew
  the table keeps every drawing; the last table of the notebook is the run, and a note names
  the others.
* **Printed dicts** in the stream outputs (``{'loss': ..., 'epoch': ...}``), read as the TRL
  console reader reads a log, when no table was saved.

The code cells say the rest: the trainer class instantiated last before the training
(``GRPOTrainer(``) becomes ``trainer_class`` in the config, and the literal keyword arguments
of a ``...Config(`` / ``TrainingArguments(`` call become config keys (``max_completion_length``,
``num_generations``, ``logging_steps``). An ``error`` output in the training cell is the run's
crash (``KeyboardInterrupt`` when it was stopped by hand); an error in a later cell is not.

Memory: the notebook is parsed whole (it is one JSON document).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from ...errors import EmptyInputError, InputError
from ...words import Words
from .._crash import crash_from
from .._reader import Reader
from ..record import Crash, Record, SkipLog, SourceMeta, Value
from ..text import integer, json_document, parse_number, strip_ansi
from . import trl_console

FORMAT = "notebook"
SUFFIX = ".ipynb"
_NOT_LOGGED = frozenset({"", "no log"})
_PROGRESS = re.compile(r"\[(\d+)/(\d+)[^\]]*\]")
_TRAINER = re.compile(r"\b([A-Z][A-Za-z]*Trainer)\s*\(")
#: a trainer's config call (GRPOConfig, DPOConfig, TrainingArguments), not a model's or LoRA's
_CONFIG_CALL = re.compile(r"\b(\w*(?:GRPO|DPO|KTO|ORPO|CPO|PPO|RLOO|Reward|SFT|BCO|XPO|GKD|PRM|Nash\w*)Config"
                          r"|\w*TrainingArguments)\s*\(")
_KWARG = re.compile(r"""\b([a-z_][a-z0-9_]*)\s*=\s*([-+]?\d[\d_]*(?:\.\d*)?(?:[eE][-+]?\d+)?|True|False|None"""
                    r"""|"[^"\n]*"|'[^'\n]*')\s*(?=[,)\n#])""")
_COMMENT = re.compile(r"#[^\n]*")
_TRAIN_COLUMNS = frozenset({"Step", "Epoch", "Training Loss"})


def sniff(path: Path, head: bytes) -> bool:
    if path.suffix == SUFFIX:
        return True
    start = head.lstrip()[:1]
    return start == b"{" and b'"nbformat"' in head and b'"cells"' in head


@dataclass
class Table:
    """One HTML table: its header and rows of cell texts, and the progress line drawn above it."""

    header: list[str]
    rows: list[list[str]]
    progress: tuple[int, int] | None = None


class _Tables(HTMLParser):
    """Collects every ``<table>`` of an HTML output (the stdlib parser: no markup runs, nothing is fetched)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[Table] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._header = False
        self._text: list[str] = []  # text since the last table: the progress line is in it

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            seen = _PROGRESS.search(" ".join(self._text))
            self.tables.append(Table([], [], (integer(seen.group(1)), integer(seen.group(2))) if seen else None))
            self._text = []
        elif tag == "tr" and self.tables:
            self._row, self._header = [], False
        elif tag in ("td", "th") and self._row is not None:
            self._cell, self._header = [], self._header or tag == "th"

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self.tables:
            table = self.tables[-1]
            if self._header and not table.header:
                table.header = self._row
            elif self._row:
                table.rows.append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        elif not self.tables or self._row is None:
            self._text.append(data)


def _text(value: Any) -> str:
    """A notebook string field: a string or a list of lines."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return value if isinstance(value, str) else ""


def cells(path: Path, doc: Any) -> list[dict[str, Any]]:
    """The notebook's cells (nbformat 4, or the first worksheet of nbformat 3); InputError otherwise."""
    found = doc.get("cells") if isinstance(doc, dict) else None
    if found is None and isinstance(doc, dict) and isinstance(doc.get("worksheets"), list) and doc["worksheets"]:
        first = doc["worksheets"][0]
        found = first.get("cells") if isinstance(first, dict) else None
    if not isinstance(found, list):
        what = Words("an object without a 'cells' list", "一个没有 'cells' 列表的对象") if isinstance(doc, dict) \
            else Words(f"a JSON {type(doc).__name__}", f"一个 JSON {type(doc).__name__}")
        raise InputError(Words(f"{path}: found {what}; expected a Jupyter notebook (a JSON object with a 'cells' list)",
                               f"{path}：读到的是{what.zh}；这里应当是 Jupyter notebook"
                               "（带 'cells' 列表的 JSON 对象）"))
    return [c for c in found if isinstance(c, dict)]


def _training_table(outputs: list[Any]) -> tuple[Table, int, int] | None:
    """The last table of these outputs whose first column is Step, with how many such tables
    there were and the index of the output holding it."""
    found: tuple[Table, int, int] | None = None
    drawn = 0
    for index, output in enumerate(outputs):
        data = output.get("data") if isinstance(output, dict) else None
        html = _text(data.get("text/html")) if isinstance(data, dict) else ""
        if "<table" not in html:
            continue
        parser = _Tables()
        parser.feed(html)
        parser.close()
        for table in parser.tables:
            if table.header[:1] == ["Step"] and len(table.header) > 1:
                drawn += 1
                found = (table, drawn, index)
    return found


def _key(name: str, evaluation: bool) -> str:
    """The raw key of a table column: verbatim, or for an evaluation column of the Trainer's own
    table the name it was logged under (``Rewards/chosen`` → ``eval_rewards/chosen``)."""
    if not evaluation:
        return name
    return "eval_" + "_".join(name.lower().split())


def _table_records(table: Table, where: str, skips: SkipLog) -> Iterator[Record]:
    header = table.header
    evaluation = "Validation Loss" in header  # the Trainer's own table: what follows the loss is evaluation
    keys = [_key(h, evaluation and h not in _TRAIN_COLUMNS and h != "Validation Loss") for h in header]
    for n, row in enumerate(table.rows, 1):
        here = f"{where} row {n}"
        if len(row) != len(header):
            skips.skip(here, Words(f"{len(row)} cells under {len(header)} column headers; the row was skipped",
                                   f"{len(header)} 个列标题下有 {len(row)} 个单元格；这一行已跳过"))
            continue
        step = parse_number(row[0])
        if step is None or not math.isfinite(step) or step != int(step):
            skips.skip(here, Words(f"step {row[0]!r} is not an integer; the row was skipped",
                                   f"步数 {row[0]!r} 不是整数；这一行已跳过"))
            continue
        values: dict[str, Value] = {}
        for key, cell in zip(keys[1:], row[1:], strict=True):
            if cell.lower() in _NOT_LOGGED:
                continue
            number = parse_number(cell)
            if number is None:
                skips.skip(here, Words(f"value {cell!r} for {key!r} is not a number; the value was skipped",
                                       f"{key!r} 的值 {cell!r} 不是数字；这个值已跳过"))
                continue
            values[key] = number
        if values:
            yield Record(int(step), values, here)


def _code_config(sources: list[str], meta: SourceMeta) -> None:
    """The trainer class and the literal keyword arguments of config calls in the code cells."""
    trainer = None
    for source in sources:
        code = _COMMENT.sub("", source)
        for m in _TRAINER.finditer(code):
            trainer = m.group(1)
        for m in _CONFIG_CALL.finditer(code):
            for kw in _KWARG.finditer(_call_text(code, m.end())):
                meta.config.setdefault(kw.group(1), _literal(kw.group(2)))
    if trainer is not None:
        meta.config["trainer_class"] = trainer


def _call_text(code: str, start: int) -> str:
    """The text of a call's arguments: from ``start`` (after its ``(``) to the matching ``)``."""
    depth = 1
    for i in range(start, min(len(code), start + 20_000)):
        char = code[i]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return code[start:i + 1]
    return code[start:start + 20_000]


def _literal(text: str) -> Any:
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    if text[:1] in "'\"":
        return text[1:-1]
    number = parse_number(text.replace("_", ""))
    return int(number) if number is not None and number == int(number) and "." not in text and "e" not in text \
        else number


def _outputs(cell: Any) -> list[Any]:
    """A code cell's outputs, or none when the notebook holds something else there."""
    found = cell.get("outputs") if isinstance(cell, dict) else None
    return found if isinstance(found, list) else []


def read(path: Path, meta: SourceMeta, skips: SkipLog) -> Iterator[Record]:
    meta.framework = "trl"
    data = path.read_bytes()
    meta.bytes_read += len(data)
    # cells are numbered from 1 in the notebook's order, markdown cells counted, as a reader scrolls to them
    doc = json_document(path, data, Words("a Jupyter notebook (.ipynb)", "Jupyter notebook（.ipynb）"))
    code = [(n, c) for n, c in enumerate(cells(path, doc), 1) if c.get("cell_type") == "code"]
    found: tuple[int, tuple[Table, int, int], list[Any]] | None = None
    for n, cell in code:
        outputs = _outputs(cell)
        hit = _training_table(outputs)
        if hit is not None:
            if found is not None:
                meta.notes.append(Words(f"{path}#cell {found[0]}: a training table was not read; the later one in "
                                        f"cell {n} is the run",
                                        f"{path}#cell {found[0]}：这张训练表没有读入；后面第 {n} 个单元格里的那张"
                                        "才是这次运行"))
            found = (n, hit, outputs)
    if found is None:
        _code_config([_text(c.get("source")) for _, c in code], meta)
        yield from _printed(path, code, meta, skips)
        return
    n, (table, drawn, index), outputs = found
    _code_config([_text(c.get("source")) for m, c in code if m <= n], meta)
    where = f"{path}#cell {n}"
    if drawn > 1:
        meta.notes.append(Words(f"{where}: the training table was drawn {drawn} times; the last drawing was read",
                                f"{where}：训练表画了 {drawn} 次；读取的是最后一次"))
    yield from _table_records(table, where, skips)
    yield from _summary(outputs, where)
    meta.crash = _error(outputs[index + 1:], where)
    meta.crash_scanned = True


def _summary(outputs: list[Any], where: str) -> Iterator[Record]:
    """``TrainOutput(global_step=…, training_loss=…, metrics={'train_runtime': …})``: the end-of-training
    totals, as a summary record."""
    for output in outputs:
        data = output.get("data") if isinstance(output, dict) else None
        text = _text(data.get("text/plain")) if isinstance(data, dict) else ""
        if "TrainOutput(" in text and "metrics=" in text:
            log = trl_console.ConsoleLog(Path(where), split=False)
            trl_console.feed(log, 1, text[text.index("metrics=") + len("metrics="):], where, SkipLog())
            for kind, values, *_ in log.dicts:
                if kind == "summary":
                    yield Record(0, values, where, kind="summary")


def _error(outputs: list[Any], where: str) -> Crash | None:
    for output in outputs:
        if isinstance(output, dict) and output.get("output_type") == "error":
            name = str(output.get("ename") or "Exception")
            message = strip_ansi(str(output.get("evalue") or "")).strip()
            return crash_from(name, message.split("\n", 1)[0], where)
    return None


def _printed(path: Path, code: list[tuple[int, dict[str, Any]]], meta: SourceMeta,
             skips: SkipLog) -> Iterator[Record]:
    """The metrics dicts printed in the stream outputs, read as a TRL console log is."""
    log = trl_console.ConsoleLog(path, split=False)  # a notebook's outputs are read as one run
    lineno = 0
    last: tuple[int, list[Any]] | None = None  # the cell of the last dict and its outputs
    for n, cell in code:
        outputs = _outputs(cell)
        held = len(log.dicts)
        for output in outputs:
            if not isinstance(output, dict) or output.get("output_type") != "stream":
                continue
            for i, line in enumerate(_text(output.get("text")).split("\n"), 1):
                lineno += 1
                trl_console.feed(log, lineno, line, f"{path}#cell {n}:{i}", skips)
        if len(log.dicts) > held:
            last = (n, outputs)
    if not log.dicts or last is None:
        raise EmptyInputError(Words(
            f"{path}: a notebook without a training table (an HTML <table> whose first column "
            "is Step, as the Trainer's notebook progress display saves it) and without printed "
            "metrics dicts in its outputs (was it saved without its outputs?)",
            f"{path}：这个 notebook 的输出里既没有训练表（Trainer 的 notebook 进度显示保存下来的、第一列是 Step 的"
            " HTML <table>），也没有打印出来的指标 dict（保存时是不是没带输出？）"))
    yield from log.records(meta)
    meta.crash, meta.crash_scanned = _error(last[1], f"{path}#cell {last[0]}"), True


READER = Reader(FORMAT, sniff, read,
                describes="a Jupyter notebook (.ipynb) whose saved outputs hold a trainer's logs or training table")
