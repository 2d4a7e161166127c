"""A safe parser for the Python literal reprs that trainers print: ``str(dict)`` and ``pprint``.

OpenRLHF (``✨ Global step 3: {...}``), HF's ProgressCallback (``{'loss': ...}``) and veRL's
config dump print Python dicts, not JSON. This module reads them without ``eval``: dicts,
lists, tuples, strings (with escapes and pprint's implicit concatenation), numbers,
``True``/``False``/``None``, ``nan``/``inf``, and the wrappers numeric metrics arrive in:
``np.float64(0.5)``, ``np.int64(3)``, ``tensor(0.5, device='cuda:0')``. Anything else is a
:class:`ReprError` naming the character position.

Example:
    >>> parse_dict("{'loss': np.float64(0.5), 'kl': tensor(0.01, device='cuda:0')}")
    {'loss': 0.5, 'kl': 0.01}
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .record import Value

__all__ = ["ReprError", "parse", "parse_dict", "parse_dict_at", "parse_cut_dict", "Dump", "parse_dump",
           "metric_values", "flatten"]

_WS = re.compile(r"\s*")
_NUM = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_STR = re.compile(r"""[uU]?(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""", re.S)
_ESC = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\}|[0-7]{1,3}|.)", re.S)
_SIMPLE_ESC = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a",
               "b": "\b", "f": "\f", "v": "\v", "\n": ""}
_CONST: dict[str, Any] = {"True": True, "False": False, "None": None, "nan": math.nan, "inf": math.inf,
                          "NaN": math.nan, "Infinity": math.inf, "np.nan": math.nan, "np.inf": math.inf,
                          "np.True_": True, "np.False_": False}
#: wrappers whose first argument is the value: numpy scalars, torch tensors, float('nan')
_CALL = re.compile(r"(?:np|numpy)\.(?:float|int|uint|bool_|str_|complex)\w*|(?:torch\.)?tensor|float|int|array")
MAX_DEPTH = 64


class ReprError(ValueError):
    """The text is not a Python literal this parser reads; ``pos`` is the character offset."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(f"at character {pos}: {message}")
        self.pos = pos


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    head = code[0]
    if head in "xuU" and len(code) > 1:
        point = int(code[1:], 16)
        return chr(point) if point <= 0x10FFFF else match.group(0)
    if head == "N" and len(code) > 1:
        try:
            return unicodedata.lookup(code[2:-1])
        except KeyError:
            return match.group(0)
    if head.isdigit() and head < "8":
        return chr(int(code, 8))
    return _SIMPLE_ESC.get(code, match.group(0))


class _Parser:
    def __init__(self, text: str, partial: bool = False, layout: bool = False) -> None:
        self.text = text
        self.pos = 0
        self.partial = partial
        self.layout = layout
        self.cut: int | None = None  # where a partial parse stopped
        self.repairs = 0  # items placed by indentation because lines were missing
        self.lost_comma = False  # a container just ended at a lost closing line

    # -- tokens -------------------------------------------------------------------------------
    def skip_ws(self) -> None:
        m = _WS.match(self.text, self.pos)
        self.pos = m.end() if m else self.pos

    def error(self, expected: str) -> ReprError:
        snippet = self.text[self.pos:self.pos + 20]
        found = repr(snippet) if snippet else "the end of the text"
        return ReprError(f"expected {expected}, found {found}", self.pos)

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos:self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.error(repr(char))
        self.pos += 1

    # -- values -------------------------------------------------------------------------------
    def value(self, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise ReprError(f"nested deeper than {MAX_DEPTH} levels", self.pos)
        char = self.peek()
        if not char:
            raise self.error("a value")
        if char == "{":
            return self.container("{", "}", depth)
        if char == "[":
            return self.container("[", "]", depth)
        if char == "(":
            return self.container("(", ")", depth)
        if char in "'\"" or (char in "uU" and self.text[self.pos + 1:self.pos + 2] in ("'", '"')):
            return self.string()
        if char == "-" or char == "+":
            sign = -1.0 if char == "-" else 1.0
            name = _NAME.match(self.text, self.pos + 1)
            if name and name.group() in ("inf", "nan", "Infinity", "NaN", "np.inf", "np.nan"):
                self.pos = name.end()
                return sign * _CONST[name.group()]
        num = _NUM.match(self.text, self.pos)
        if num:
            self.pos = num.end()
            body = num.group()
            # an integer too long for int() (4,300 digits) is kept as the float it rounds to
            return float(body) if any(c in body for c in ".eE") or len(body) > 40 else int(body)
        name = _NAME.match(self.text, self.pos)
        if name:
            return self.named(name, depth)
        raise self.error("a value")

    def string(self) -> str:
        parts = []
        while True:
            m = _STR.match(self.text, self.pos)
            if m is None:
                raise self.error("a closed string")
            body = m.group().lstrip("uU")[1:-1]
            parts.append(_ESC.sub(_unescape, body) if "\\" in body else body)
            self.pos = m.end()
            # pprint wraps a long string as implicitly concatenated pieces, one per line
            if self.peek() not in ("'", '"'):
                return "".join(parts)

    def named(self, name: re.Match[str], depth: int) -> Any:
        word = name.group()
        self.pos = name.end()
        if word in _CONST:
            return _CONST[word]
        if self.peek() == "(" and _CALL.fullmatch(word):
            return self.call(word, name.start(), depth)
        self.pos = name.start()
        raise self.error("a value")

    def call(self, word: str, start: int, depth: int) -> Any:
        self.pos += 1  # '('
        inner = self.value(depth + 1)
        while self.peek() == ",":
            self.pos += 1
            if self.peek() == ")":
                break
            key = _NAME.match(self.text, self.pos)
            if key is None or self.text[key.end():key.end() + 1] != "=":
                raise self.error("keyword=value inside the call")
            self.pos = key.end() + 1
            self.keyword_value(depth)
        self.expect(")")
        if word.startswith(("float", "np.float", "numpy.float")) and isinstance(inner, (str, int)):
            try:
                return float(inner)
            except ValueError:
                raise ReprError(f"{word}({inner!r}) is not a number", start) from None
        return inner

    def keyword_value(self, depth: int) -> None:
        """``device='cuda:0'``, ``dtype=torch.float32``, ``grad_fn=<MeanBackward0>``: read and drop."""
        if self.peek() == "<":
            end = self.text.find(">", self.pos)
            if end < 0:
                raise self.error("'>'")
            self.pos = end + 1
            return
        name = _NAME.match(self.text, self.pos)
        if name and name.group() not in _CONST:
            self.pos = name.end()
            return
        self.value(depth + 1)

    def container(self, open_: str, close: str, depth: int) -> Any:
        start = self.pos
        self.pos += 1
        out: dict[Any, Any] | list[Any] = {} if open_ == "{" else []
        trailing_comma = False
        ref = self.column(self.pos) if self.layout else -1  # pprint aligns items one past the bracket
        # a partial read keeps the dicts and lists read so far; a cut tuple or call is unreadable
        keep_partial = self.partial and open_ != "("
        while True:
            if self.peek() == close:
                self.pos += 1
                break
            col = self.column(self.pos) if ref >= 0 and self.starts_line(self.pos) else ref
            if col < ref:  # the closing line was lost: the item belongs to an outer container
                self.repairs += 1
                self.lost_comma = True
                break
            item_start = self.pos
            try:
                self.item(out, depth, keep=col == ref)
            except ReprError:
                if not keep_partial:
                    raise
                self.cut = item_start
            if self.cut is not None:
                break
            if col > ref:  # its opening line was lost: there is no telling where it belongs
                self.repairs += 1
            trailing_comma = self.peek() == ","
            if trailing_comma:
                self.pos += 1
            elif self.lost_comma and self.peek() != close:
                self.lost_comma = False  # the comma went with the lost closing line
            elif self.peek() != close:
                if not keep_partial:
                    raise self.error(f"',' or {close!r}")
                self.cut = self.pos
                break
        if isinstance(out, dict):
            return out
        if open_ == "(" and len(out) == 1 and not trailing_comma:
            return out[0]  # a parenthesised value, e.g. a wrapped string
        if open_ == "(" and not out and self.text[start + 1:self.pos - 1].strip():
            raise ReprError("unreadable parentheses", start)
        return out

    def item(self, out: dict[Any, Any] | list[Any], depth: int, keep: bool) -> None:
        if isinstance(out, list):
            value = self.value(depth + 1)
            if keep:
                out.append(value)
            return
        key_at = self.pos
        key = self.value(depth + 1)
        if isinstance(key, (list, dict)):
            raise ReprError(f"a {type(key).__name__} cannot be a dict key", key_at)
        self.expect(":")
        value = self.value(depth + 1)
        if keep:
            out[key] = value

    # -- pprint layout ---------------------------------------------------------------------------
    def column(self, pos: int) -> int:
        return pos - (self.text.rfind("\n", 0, pos) + 1)

    def starts_line(self, pos: int) -> bool:
        return not self.text[self.text.rfind("\n", 0, pos) + 1:pos].strip()


def parse(text: str) -> Any:
    """The Python literal in ``text`` (the whole text, surrounding whitespace allowed)."""
    parser = _Parser(text)
    value = parser.value()
    parser.skip_ws()
    if parser.pos != len(text):
        raise parser.error("the end of the text")
    return value


def parse_dict(text: str) -> dict[Any, Any]:
    """A dict repr as a dict; ReprError (a ValueError) if ``text`` is not exactly one dict."""
    parser = _Parser(text)
    if parser.peek() != "{":
        raise parser.error("'{'")
    value = parser.value()
    parser.skip_ws()
    if parser.pos != len(text):
        raise parser.error("the end of the text")
    return value  # type: ignore[no-any-return]


def parse_dict_at(text: str, start: int) -> tuple[dict[Any, Any], int]:
    """The dict repr that begins at ``text[start]`` (``'{'``) and the position just after it, so
    that a dict glued between other text (a progress bar before it, more text after) is read
    without knowing where it ends; ReprError if no whole dict begins there.

    Example:
        >>> parse_dict_at("50/160 [21:49<53:16]{'loss': 0.69, 'epoch': 0.06} tail", 20)
        ({'loss': 0.69, 'epoch': 0.06}, 49)
    """
    parser = _Parser(text)
    parser.pos = start
    if text[start:start + 1] != "{":
        raise parser.error("'{'")
    value = parser.value()
    return value, parser.pos


def parse_cut_dict(text: str, start: int) -> dict[Any, Any]:
    """The items of a dict repr whose end was cut off (a console line cut at a length limit): the
    items read whole, without the one the cut went through — a value that ends where the text
    ends may be a number cut short, so it is left out too. ReprError if no dict begins there.

    Example:
        >>> parse_cut_dict("{'loss': 0.5, 'grad_norm': 1.2, 'learning_rate': 1.23", 0)
        {'loss': 0.5, 'grad_norm': 1.2}
    """
    parser = _Parser(text, partial=True)
    parser.pos = start
    if text[start:start + 1] != "{":
        raise parser.error("'{'")
    value = parser.value()
    if not isinstance(value, dict):
        raise ReprError("not a dict", start)
    cut = len(text) if parser.cut is None else parser.cut
    if value and not text[cut:].strip() and not text[:cut].rstrip().endswith(","):
        del value[next(reversed(value))]  # it ran to the end of the text: it may be cut short
    return value


@dataclass(frozen=True)
class Dump:
    """What :func:`parse_dump` could read of a pprint'ed dict."""

    value: dict[Any, Any]
    #: character position where reading stopped, None when the dict was read to its end
    cut: int | None
    #: items placed by their indentation (or dropped) because lines of the dump were missing
    repairs: int


def parse_dump(text: str) -> Dump:
    """Read as much of a ``pprint``'ed dict as is intact.

    Lines of such a dump go missing in captured logs (Ray drops a line that repeats another
    process's recent output) and another process's text can cut it short. pprint puts every
    item of a multi-line container one column right of its bracket, so an item that starts a
    line is placed by that column; reading stops at the first damage it cannot place.
    """
    parser = _Parser(text, partial=True, layout=True)
    if parser.peek() != "{":
        raise parser.error("'{'")
    value = parser.value()
    return Dump(value, parser.cut, parser.repairs)


def metric_values(obj: Mapping[Any, Any]) -> dict[str, Value]:
    """The scalar entries of a metrics dict: numbers and bools as floats, ``None`` as NaN
    (TRL logs None when every value of a metric was NaN), strings kept; lists, dicts and
    non-string keys are left out."""
    out: dict[str, Value] = {}
    for key, value in obj.items():
        if not isinstance(key, str):
            continue
        if value is None:
            out[key] = math.nan
        elif isinstance(value, (bool, int, float)):
            try:
                out[key] = float(value)
            except OverflowError:
                out[key] = math.inf if value > 0 else -math.inf
        elif isinstance(value, str):
            out[key] = value
    return out


def flatten(obj: Mapping[Any, Any], sep: str = ".", prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one level of ``a.b.c`` keys; lists and empty dicts stay values."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, sep, name + sep))
        else:
            out[name] = value
    return out
