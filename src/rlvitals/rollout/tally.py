"""Readers' notes that sum over the files: a note whose numbers come from the whole input.

A rollout reader says what it noticed (``"3 value(s) of 'length' are not numbers"``, ``"group sizes vary:
4, 8 samples"``). Read shard by shard (:mod:`rlvitals.rollout.shards`), each shard notices its own part;
the user must still read one note with the whole input's numbers, the same as a read of everything at
once. A :class:`Tally` is such a note: its text is drawn from its data, and two tallies with the same key
combine their data and draw the note again. A :class:`FileNote` is about one file and stays as it is.

:func:`merged` is the one order every reader's notes are shown in, for one read or many: the notes about
files first (in file order), then the tallies of the values read (bad numbers and booleans, TRL's row
counts), then the other notes in first-seen order (a note seen twice once), then the tallies of the table
as a whole (groups, sizes, correctness) — each kind of tally in the order the reader notices it.

>>> a = counted_values(("length", False), 2, "a.jsonl:3", "x")
>>> b = counted_values(("length", False), 1, "b.jsonl:9", "y")
>>> str(merged([[a], [b]])[0])
"3 value(s) of 'length' are not numbers (e.g. a.jsonl:3: 'x'); they were read as unknown (null)"
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..words import Words

__all__ = ["FileNote", "Tally", "binary_scores", "combined_scores", "correct_tally", "counted_bools", "counted_values",
           "file_note", "merged", "row_counts", "sizes_tally", "text_steps"]


class FileNote(Words):
    """A note about one file (``"3.jsonl holds no samples"``): shown first, never combined."""

    def __reduce__(self) -> tuple[Any, ...]:
        return FileNote, (str(self), self.zh)


def file_note(words: Words) -> FileNote:
    return FileNote(str(words), words.zh)


@dataclass(frozen=True)
class _Kind:
    """How a tally's data combines and is drawn; ``rank`` orders tallies as the reader notices them."""

    rank: int
    combine: Callable[[Any, Any], Any]
    draw: Callable[[Any, Any], Words | None]


class Tally(Words):
    """A note drawn from data that combines across shards (see the module docstring). ``key`` is
    ``(kind, detail)``: tallies combine when their keys are equal."""

    key: tuple[str, Any]
    data: Any

    def __new__(cls, key: tuple[str, Any], data: Any) -> Tally:
        words = _KINDS[key[0]].draw(key[1], data) or Words("", "")
        self = cast(Tally, super().__new__(cls, str(words), words.zh))
        self.key, self.data = key, data
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return Tally, (self.key, self.data)

    def __getnewargs__(self) -> tuple[tuple[str, Any], Any]:  # type: ignore[override]
        return self.key, self.data

    def with_(self, other: Tally) -> Tally:
        return Tally(self.key, _KINDS[self.key[0]].combine(self.data, other.data))

    @property
    def rank(self) -> int:
        return _KINDS[self.key[0]].rank


def merged(lists: Iterable[Sequence[str]]) -> list[str]:
    """The notes of one or several reads in the one order they are shown in (module docstring); a tally
    that draws no note (its numbers say nothing is wrong) is left out."""
    files: list[str] = []
    plain: dict[str, None] = {}
    tallies: dict[tuple[str, Any], Tally] = {}
    for notes in lists:
        for note in notes:
            if isinstance(note, FileNote):
                files.append(note)
            elif isinstance(note, Tally):
                tallies[note.key] = tallies[note.key].with_(note) if note.key in tallies else note
            elif note not in plain:
                plain[note] = None
    ordered = [t for t in sorted(tallies.values(), key=lambda t: t.rank) if str(t)]  # stable within a rank
    return files + [t for t in ordered if t.rank < 2] + list(plain) + [t for t in ordered if t.rank >= 2]


# --- the kinds ---------------------------------------------------------------------------------

def _few(items: Sequence[object], k: int = 5) -> Words:
    more = len(items) > k
    return Words(", ".join(str(i) for i in items[:k]) + (f" … ({len(items)} in all)" if more else ""),
                 "、".join(str(i) for i in items[:k]) + (f" …（共 {len(items)} 个）" if more else ""))


def _first_kept(a: tuple[int, str, str], b: tuple[int, str, str]) -> tuple[int, str, str]:
    return a[0] + b[0], a[1], a[2]


def _draw_values(detail: tuple[str, bool], data: tuple[int, str, str]) -> Words:
    (col, whole), (n, where, value) = detail, data
    return Words(f"{n} value(s) of '{col}' are not{' whole' if whole else ''} numbers "
                 f"(e.g. {where}: {value!r}); they were read as unknown (null)",
                 f"'{col}' 有 {n} 个值不是{'整数' if whole else '数值'}（如 {where}：{value!r}）；"
                 "这些值读作未知（空值）")


def counted_values(detail: tuple[str, bool], n: int, where: str, value: str) -> Tally:
    """``n`` values of column ``detail[0]`` that are not (whole, ``detail[1]``) numbers, the first at ``where``."""
    return Tally(("values", detail), (n, where, value))


def _draw_bools(col: str, odd: int) -> Words:
    return Words(f"{odd} value(s) of '{col}' are neither true/false nor 0/1; they were read as unknown (null)",
                 f"'{col}' 有 {odd} 个值既不是 true/false 也不是 0/1；这些值读作未知（空值）")


def counted_bools(col: str, odd: int) -> Tally:
    return Tally(("bools", col), odd)


def _draw_text_steps(_: None, steps: tuple[int, ...]) -> Words | None:
    if not steps:
        return None
    few = _few(steps)
    return Words(f"the same prompt appears in separate runs at step(s) {few} (samples not consecutive, as in "
                 "validation dumps): those steps are grouped by prompt text",
                 f"同一个 prompt 在第 {few.zh} 步分成几段出现（样本不相邻，验证数据的导出就是这样）："
                 "这些步按 prompt 文本分组")


def text_steps(steps: Sequence[int]) -> Tally:
    """The steps grouped by prompt text because a prompt came back in a later run."""
    return Tally(("text_steps", None), tuple(sorted(steps)))


def _union(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(set(a) | set(b)))


#: group sizes: with a group_size, (groups in all, groups of another size, the first three of them as
#: (step, group, size) in step and group order); without, the sizes seen
_Sizes = tuple[int, int, tuple[tuple[int, str, int], ...]] | tuple[int, ...]


def _combine_sizes(a: Any, b: Any) -> Any:
    if isinstance(a, tuple) and len(a) == 3 and isinstance(a[2], tuple):
        return a[0] + b[0], a[1] + b[1], tuple(sorted(a[2] + b[2])[:3])
    return _union(a, b)


def _draw_sizes(group_size: int | None, data: Any) -> Words | None:
    if group_size is None:
        if len(data) < 2:
            return None
        few = _few(list(data))
        return Words(f"group sizes vary: {few} samples", f"各组大小不一：{few.zh} 个样本")
    total, bad, eg = data
    if not bad:
        return None
    en = [f"step {s} group {g}: {k}" for s, g, k in eg]
    zh = [f"第 {s} 步的组 {g}：{k} 个" for s, g, k in eg]
    return Words(f"{bad} of {total} groups do not have group_size={group_size} samples ({'; '.join(en)})",
                 f"{total} 个组中有 {bad} 个的样本数不是 group_size={group_size}（{'；'.join(zh)}）")


def sizes_tally(group_size: int | None, data: _Sizes) -> Tally:
    return Tally(("sizes", group_size), data)


#: correctness from the score: (the table has a correctness column, scores, rows with a score and no
#: correctness, lowest score, highest score)
_Correct = tuple[bool, int, int, float, float]


def _combine_correct(a: _Correct, b: _Correct) -> _Correct:
    if a[1] == 0:
        return a[0] or b[0], b[1], a[2] + b[2], b[3], b[4]
    if b[1] == 0:
        return a[0] or b[0], a[1], a[2] + b[2], a[3], a[4]
    return a[0] or b[0], a[1] + b[1], a[2] + b[2], min(a[3], b[3]), max(a[4], b[4])


def combined_scores(datas: Sequence[_Correct]) -> _Correct:
    """The score-range data of several reads as one (what their tallies combine to)."""
    out = datas[0]
    for d in datas[1:]:
        out = _combine_correct(out, d)
    return out


def binary_scores(data: _Correct) -> bool:
    """Whether the scores lie in [-1, 1], like a 0/1 or ±1 outcome reward."""
    return data[3] >= -1.0 and data[4] <= 1.0


def _draw_correct(_: None, data: _Correct) -> Words | None:
    has_column, scores, gaps, lo, hi = data
    if not scores:
        return None
    binary = binary_scores(data)
    if has_column:
        if not gaps:
            return None
        if binary:
            return Words(f"{gaps} rollout(s) have a score but no correctness value: theirs is taken from the score "
                         "(correct = score >= 1.0, as scores lie in [-1, 1])",
                         f"有 {gaps} 个 rollout 有分数但没有对错值：其对错取自分数（分数 >= 1.0 为对，"
                         "因为分数都在 [-1, 1] 内）")
        return Words(f"{gaps} rollout(s) have no correctness value and scores range over [{lo:g}, {hi:g}], not a 0/1 "
                     "reward: their correctness is unknown and they are left out of pass@k / maj@k",
                     f"有 {gaps} 个 rollout 没有对错值，而分数分布在 [{lo:g}, {hi:g}]，不是 0/1 reward："
                     "其对错未知，不计入 pass@k / maj@k")
    if binary:
        return Words("correctness taken from the score (correct = score >= 1.0), as scores lie in [-1, 1] like a 0/1 "
                     "outcome reward; give a correctness column if that is wrong",
                     "对错取自分数（分数 >= 1.0 为对），因为分数都在 [-1, 1] 内，像 0/1 的结果 reward；"
                     "如果不对，请给出对错列")
    return Words(f"scores range over [{lo:g}, {hi:g}], not a 0/1 reward, so no correctness column was made: "
                 "length × correctness and difficulty buckets are skipped, and pass@k / maj@k count a rollout "
                 "correct when score >= 1.0; give a correctness column (--correct) if that is wrong",
                 f"分数分布在 [{lo:g}, {hi:g}]，不是 0/1 reward，因此没有生成对错列：长度 × 对错和难度分档"
                 "都跳过，pass@k / maj@k 把分数 >= 1.0 的 rollout 算作对；如果不对，请给出对错列（--correct）")


def correct_tally(data: _Correct) -> Tally:
    return Tally(("correct", None), data)


def _combine_rows(a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    return a + b


def _draw_rows(_: None, files: tuple[tuple[str, int], ...]) -> Words | None:
    counts: dict[int, int] = {}
    for _path, rows in files:
        counts[rows] = counts.get(rows, 0) + 1
    if len(counts) < 2:
        return None
    usual = max(counts, key=lambda r: (counts[r], -list(counts).index(r)))  # the commonest; first seen on a tie
    odd = [path for path, rows in files if rows != usual]
    return Words(f"{len(odd)} file(s) have a row count other than {usual} (e.g. {odd[0]}): at a step that also "
                 "evaluates, TRL overwrites the train completions with the eval ones",
                 f"有 {len(odd)} 个文件的行数不是 {usual}（如 {odd[0]}）：在同时做 eval 的步上，TRL 会用 "
                 "eval 的生成结果覆盖训练的生成结果")


def row_counts(files: Sequence[tuple[str, int]]) -> Tally:
    """TRL completion files and their row counts (a file with another count than most is named)."""
    return Tally(("rows", None), tuple(files))


_KINDS: dict[str, _Kind] = {
    "rows": _Kind(0, _combine_rows, _draw_rows),
    "values": _Kind(1, _first_kept, _draw_values),
    "bools": _Kind(1, lambda a, b: a + b, _draw_bools),
    "text_steps": _Kind(2, _union, _draw_text_steps),
    "sizes": _Kind(3, _combine_sizes, _draw_sizes),
    "correct": _Kind(4, _combine_correct, _draw_correct),
}
