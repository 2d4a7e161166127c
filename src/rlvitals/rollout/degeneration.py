"""Degenerate text in the responses, per step: long runs of one short unit, non-words, and the vocabulary.

A reward can keep rising while the policy writes garbage (the reward model or a lenient parser pays for it), and
without validation only the text shows it. Four per-step metrics read it, language-neutrally:

* ``rollout/degenerate/char_run`` — share of responses holding a long run: one unit of 1 to
  :data:`RUN_UNIT` characters written :data:`RUN_REPEATS` times or more in a row, over at least
  :data:`RUN_CHARS` characters, the unit not only whitespace (``!!!!…``, ``the the the …``, ``ababab…``);
* ``rollout/degenerate/nonword`` — share of the step's words that are no word of any language (:func:`nonword`);
* ``rollout/vocab/distinct`` — mean number of distinct words per response;
* ``rollout/vocab/ratio`` — mean share of a response's words that are distinct (type-token ratio): a response
  that shrinks keeps it, one that loops on a few words loses it.

Words are runs of non-space characters, except that every Han, Hiragana and Katakana character is a word of its
own (Chinese and Japanese are written without spaces: a sentence is no word, and no non-word either).

Streaming: ``update(state | None, chunk)``, ``merge(a, b)``, ``compute(state)``. The state keeps integer counts
per step and each response's ratio (summed with ``math.fsum``), so a sharded result equals the unsharded one bit
for bit.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import polars as pl

from ..words import Words
from .schema import RESPONSE, STEP

__all__ = ["KEYS", "DegenerationState", "compute", "degeneration_table", "has_long_run", "long_runs", "merge",
           "nonword", "update"]

#: a long run: a unit of at most RUN_UNIT characters repeated at least RUN_REPEATS times, over RUN_CHARS or more
RUN_UNIT, RUN_REPEATS, RUN_CHARS = 40, 4, 32
#: punctuation soup: a word with no letter or digit, at least SOUP_CHARS long with SOUP_DISTINCT different signs
SOUP_CHARS, SOUP_DISTINCT = 6, 4
#: a Latin word with no vowel is a non-word from this many letters (all capitals: an acronym up to twice as long)
NO_VOWEL = 5
#: a word: a Han, Hiragana or Katakana character alone, else a run of other non-space characters
WORDS = r"[\p{Han}\p{Hiragana}\p{Katakana}]|[^\s\p{Han}\p{Hiragana}\p{Katakana}]+"
#: scripts that are no evidence of mixing: Greek letters sit in Latin math, the rest are not scripts
_NEUTRAL = frozenset({"GREEK", "MATHEMATICAL", "MODIFIER", "SCRIPT", "BLACK-LETTER", "DOUBLE-STRUCK", "PLANCK",
                      "ANGSTROM", "KELVIN", "OHM", "NUMERO", "ROMAN", "CIRCLED", "PARENTHESIZED", "SUPERSCRIPT",
                      "SUBSCRIPT", "SMALL", "TURNED"})
#: scripts written without spaces between words: their text carries Latin words inside its own
_SPACELESS = frozenset({"CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "HANGUL", "BOPOMOFO", "FULLWIDTH",
                        "HALFWIDTH", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN", "YI", "IDEOGRAPHIC"})
#: a character that is no text: control, private use, unassigned, surrogate; and U+FFFD (bytes that were no UTF-8)
_NO_TEXT = frozenset({"Cc", "Co", "Cn", "Cs"})
#: case inside a word: four lower-case letters then a capitalised word (``todayPositive``), or capitals between
#: lower-case letters (``reheAVwCo``), on the word's case string (l lower, u upper, o other)
_CASE = re.compile(r"l{4}ul{2}|lu{2,}l")
KEYS = ("rollout/degenerate/char_run", "rollout/degenerate/nonword", "rollout/vocab/distinct", "rollout/vocab/ratio")


def has_long_run(text: str) -> bool:
    """Whether ``text`` holds a long run (module docstring): one unit of at most 40 characters written 4 times or
    more in a row, over at least 32 characters, the unit not only whitespace (indentation is no loop).

    >>> has_long_run("ok " + "!" * 40), has_long_run("the " * 8 + "end"), has_long_run("so " * 9)
    (True, True, False)
    >>> has_long_run("-" * 20 + " a table rule"), has_long_run("x" + " " * 64 + "y")
    (False, False)
    """
    return bool(long_runs([text])[0])


#: every whitespace code point (what ``str.isspace`` accepts)
_SPACES = np.array([c for c in range(0x3001) if chr(c).isspace()], np.int64)


def long_runs(texts: Sequence[str]) -> np.ndarray:
    """:func:`has_long_run` of each text, at once: the texts' code points joined (each separator a value of its
    own), and for every unit length L the stretches where each character equals the one L further on — a run of a
    unit of L characters — long enough to cover :data:`RUN_CHARS` characters and :data:`RUN_REPEATS` units, not
    all whitespace. NumPy over the whole chunk, 40 passes (a backtracking regex took seconds per megabyte).

    >>> long_runs(["ab" * 20, "a normal sentence", "x" * 31]).tolist()
    [True, False, False]
    """
    out = np.zeros(len(texts), bool)
    if not texts:
        return out
    joined = np.frombuffer("\x00".join(texts).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    lengths = np.fromiter((len(t) for t in texts), np.int64, len(texts))
    seps = np.cumsum(lengths[:-1] + 1) - 1  # where each separator sits
    joined[seps] = -1 - np.arange(len(seps))
    spaces = np.concatenate([[0], np.cumsum(np.isin(joined, _SPACES))])
    for unit in range(1, RUN_UNIT + 1):
        need = max(RUN_CHARS, RUN_REPEATS * unit) - unit  # equal pairs in a row
        if len(joined) <= unit + need - 1:
            break
        same = np.concatenate([[False], joined[:-unit] == joined[unit:], [False]])
        edges = np.flatnonzero(np.diff(same.astype(np.int8)))
        begin, stop = edges[::2], edges[1::2]  # [begin, stop): runs of equal pairs
        keep = stop - begin >= need
        begin, stop = begin[keep], stop[keep]
        covered = stop + unit - begin
        begin = begin[spaces[stop + unit] - spaces[begin] < covered]  # not whitespace only
        out[np.searchsorted(seps, begin)] = True
    return out


@lru_cache(maxsize=1 << 12)
def _script(ch: str) -> str:
    return unicodedata.name(ch, "").split(" ", 1)[0]


def _trim(word: str) -> str:
    """``word`` without the punctuation, symbols and marks around it."""
    a, b = 0, len(word)
    while a < b and unicodedata.category(word[a])[0] in "PSZ":
        a += 1
    while b > a and unicodedata.category(word[b - 1])[0] in "PSZ":
        b -= 1
    return word[a:b]


def _mixed(letters: str) -> bool:
    """Letters of two alphabets (Latin and Cyrillic, Arabic and Latin …); a spaceless script's text may hold Latin."""
    groups = {"CJK" if s in _SPACELESS else s for s in map(_script, letters) if s not in _NEUTRAL}
    if "CJK" in groups:
        groups.discard("LATIN")
    return len(groups) >= 2


def _no_vowel(letters: str) -> bool:
    if len(letters) < NO_VOWEL or any(_script(c) != "LATIN" for c in letters):
        return False
    if letters.isupper() and len(letters) < 2 * NO_VOWEL:
        return False  # an acronym (LGBTQ, HTTPS)
    base = unicodedata.normalize("NFD", letters.lower())
    return not any(c in "aeiouy" for c in base)


@lru_cache(maxsize=1 << 16)
def nonword(word: str) -> bool:
    """Whether ``word`` is no word of any language, by rules that hold for every script:

    * it holds a character that is no text (a control or private-use character, an unassigned code point, the
      replacement character U+FFFD that stands for bytes that were no UTF-8);
    * it mixes the letters of two alphabets (``hellоworld`` with a Cyrillic о); Greek in Latin is math, and the
      scripts written without spaces (Han, Kana, Hangul, Thai …) carry Latin words inside theirs;
    * five or more Latin letters with no vowel (``xkcdfg``; an all-capital acronym up to nine letters is a word);
    * a case change inside it: four lower-case letters then a capitalised word (``todayPositive``), or capitals
      between lower-case letters (``reheAVwCo``);
    * no letter or digit at all, six or more signs of four kinds or more (``?!#@%$``: punctuation soup).

    Punctuation, symbols and marks around a word are set aside first (``(word),`` is ``word``).

    >>> [nonword(w) for w in ("hello", "(world),", "使用GRPO训练", "Δx", "naïve", "LGBTQ", "x²+y²", "12.5%")]
    [False, False, False, False, False, False, False, False]
    >>> [nonword(w) for w in ("xkcdfgh", "hellоworld", "todayPositive", "reheAVwCo", "?!#@%$", "ab\\ufffdcd")]
    [True, True, True, True, True, True]
    """
    core = _trim(word)
    if not core:
        return len(word) >= SOUP_CHARS and len(set(word)) >= SOUP_DISTINCT
    if "\ufffd" in core or any(unicodedata.category(c) in _NO_TEXT for c in core):
        return True
    letters = "".join(c for c in core if c.isalpha())
    if not letters:
        return False
    if _mixed(letters) or _no_vowel(letters):
        return True
    case = "".join("l" if c.islower() else "u" if c.isupper() else "o" for c in core)
    return _CASE.search(case) is not None


@dataclass(frozen=True)
class StepText:
    """One step's partial state: integer counts (responses, those with a long run, words, non-words, distinct
    words summed over responses) and each response's type-token ratio."""

    counts: tuple[int, int, int, int, int]
    ratios: np.ndarray

    def __add__(self, o: StepText) -> StepText:
        return StepText(tuple(a + b for a, b in zip(self.counts, o.counts, strict=True)),  # type: ignore[arg-type]
                        np.concatenate([self.ratios, o.ratios]))


@dataclass(frozen=True)
class DegenerationState:
    """Mergeable partial state of :func:`degeneration_table`: one :class:`StepText` per step."""

    steps: dict[int, StepText] = field(default_factory=dict)


def _per_response(chunk: pl.DataFrame) -> pl.DataFrame:
    """Per response with a text: step, long run, words, distinct words, non-words."""
    texts = chunk.select(STEP, RESPONSE).filter(pl.col(RESPONSE).is_not_null())
    words = texts.select(STEP, pl.col(RESPONSE).str.extract_all(WORDS).alias("w")).with_row_index("i")
    runs = pl.Series("run", long_runs(texts.get_column(RESPONSE).to_list()), pl.Boolean)
    flat = words.select("i", "w").explode("w").drop_nulls("w")
    seen = flat.get_column("w").unique()
    flags = pl.DataFrame({"w": seen, "bad": [nonword(w) for w in seen.to_list()]}, schema={"w": pl.Utf8,
                                                                                            "bad": pl.Boolean})
    bad = flat.join(flags, on="w", how="left").group_by("i").agg(pl.col("bad").sum().alias("bad"))
    out = words.with_columns(runs, pl.col("w").list.len().alias("n"), pl.col("w").list.n_unique().alias("u"))
    return out.drop("w").join(bad, on="i", how="left").with_columns(pl.col("bad").fill_null(0))


def update(state: DegenerationState | None, chunk: pl.DataFrame) -> DegenerationState:
    """Fold a chunk of rollouts into ``state`` (None: a new state). Needs the ``response`` column."""
    if RESPONSE not in chunk.columns or STEP not in chunk.columns:
        raise ValueError(Words(f"degenerate-text metrics need the rollout column '{RESPONSE}'; the table has "
                               f"{chunk.columns}",
                               f"退化文本指标需要 rollout 列 '{RESPONSE}'；表中只有这些列：{chunk.columns}"))
    per = _per_response(chunk)
    agg = per.group_by(STEP).agg(pl.len().alias("r"), pl.col("run").sum().alias("runs"), pl.col("n").sum(),
                                 pl.col("bad").sum(), pl.col("u").sum(),
                                 (pl.col("u") / pl.col("n")).filter(pl.col("n") > 0).alias("ratio"))
    steps = {int(r[STEP]): StepText((int(r["r"]), int(r["runs"]), int(r["n"]), int(r["bad"]), int(r["u"])),
                                    np.asarray(r["ratio"], float)) for r in agg.iter_rows(named=True)}
    new = DegenerationState(steps)
    return new if state is None else merge(state, new)


def merge(a: DegenerationState, b: DegenerationState) -> DegenerationState:
    """Combine two states built from disjoint sets of rollouts."""
    steps = dict(a.steps)
    for step, acc in b.steps.items():
        steps[step] = steps[step] + acc if step in steps else acc
    return DegenerationState(steps)


def _div(num: float, den: int) -> float | None:
    return num / den if den else None


def compute(state: DegenerationState) -> pl.DataFrame:
    """Per-step frame of :func:`degeneration_table` from a state."""
    rows = []
    for step in sorted(state.steps):
        acc = state.steps[step]
        r, runs, n, bad, u = acc.counts
        rows.append({STEP: step, KEYS[0]: _div(runs, r), KEYS[1]: _div(bad, n), KEYS[2]: _div(u, r),
                     KEYS[3]: _div(math.fsum(acc.ratios.tolist()), acc.ratios.size)})
    schema = {STEP: pl.Int64(), **{k: pl.Float64() for k in KEYS}}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def degeneration_table(df: pl.DataFrame) -> pl.DataFrame:
    """Per-step ``rollout/degenerate/char_run``, ``rollout/degenerate/nonword``, ``rollout/vocab/distinct`` and
    ``rollout/vocab/ratio`` (module docstring): ``compute(update(None, df))``.

    >>> df = pl.DataFrame({"step": [1, 1], "response": ["The answer is 4.", "ha" * 20]})
    >>> degeneration_table(df).select("rollout/degenerate/char_run", "rollout/vocab/distinct").row(0)
    (0.5, 2.5)
    """
    return compute(update(None, df))
