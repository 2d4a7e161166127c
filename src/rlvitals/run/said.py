"""What a followed log tells its reader about rotations and restarts, in English and Chinese, and how
Words outlive a restart: a follower's state file is JSON, which keeps the English of a note or a skip
reason; its Chinese is stored beside it and joined again on resume.

Example:
    >>> from rlvitals.words import Words, in_lang
    >>> texts = [Words("3 lines skipped", "跳过了 3 行"), "plain"]
    >>> back = with_chinese(list(map(str, texts)), chinese_of(texts))
    >>> back == texts, in_lang(back[0], "zh"), in_lang(back[1], "zh")
    (True, '跳过了 3 行', 'plain')
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..words import Words

__all__ = ["chinese_of", "gap", "repointed", "restarted", "told", "with_chinese"]

#: how a followed file changed, in Chinese (the English is the change's own name)
_CHANGES = {"truncated": "被截断了", "replaced": "被替换了",
            "rotated before a line of it was read": "在读到它的任何一行之前就被轮转了"}


def chinese_of(texts: Sequence[str]) -> list[str | None]:
    """The Chinese of each text (None for a text without), to store beside the texts themselves."""
    return [t.zh if isinstance(t, Words) else None for t in texts]


def with_chinese(texts: Sequence[str], zh: object) -> list[str]:
    """``texts`` read back from a state file, each joined to its stored Chinese (:func:`chinese_of`)."""
    said = zh if isinstance(zh, list) else []
    return [Words(t, said[i]) if i < len(said) and isinstance(said[i], str) else t for i, t in enumerate(texts)]


def restarted(path: Path, change: str, lines: int, old: Path | None, lost: bool) -> Words:
    """The message of a followed file that is not the one being read any more (``change``)."""
    return Words(f"{path}: the file was {change}" + (f" after line {lines}" if lines else "")
                 + (f"; read the rest of the old content from {old.name}" if old else "")
                 + ("; lines written after the last poll and before that were not seen" if lost else "")
                 + "; following the new file from its first line",
                 f"{path}：文件{_CHANGES.get(change, change)}" + (f"（在第 {lines} 行之后）" if lines else "")
                 + (f"；旧内容余下的部分从 {old.name} 读取" if old else "")
                 + ("；上次轮询之后、这之前写入的行没有读到" if lost else "")
                 + "；从新文件的第一行开始跟踪")


def repointed(path: Path, before: str, now: str, lines: int, old: Path | None, lost: bool, start: int) -> Words:
    """The message of a followed symlink that leads to another file now (``now``, was ``before``, read to
    line ``lines``); ``start``: the lines of the new file read already (or not this log's)."""
    was, new = Path(before).name, Path(now).name
    return Words(f"{path}: now points at {new} (was {was}" + (f", read to line {lines}" if lines else "") + ")"
                 + (f"; read the rest of {old.name}" if old else "")
                 + ("; lines written after the last poll and before that were not seen" if lost else "")
                 + (f"; following {new} after line {start}" if start else f"; following {new} from its first line"),
                 f"{path}：现在指向 {new}（原先是 {was}" + (f"，读到第 {lines} 行" if lines else "") + "）"
                 + (f"；读了 {old.name} 余下的部分" if old else "")
                 + ("；上次轮询之后、这之前写入的行没有读到" if lost else "")
                 + (f"；从 {new} 第 {start} 行之后继续跟踪" if start else f"；从 {new} 的第一行开始跟踪"))


def gap(lost: bool, gone: Sequence[str], compressed: Sequence[str], capped: Sequence[str] = ()) -> Words:
    """Why lines may be lost at a rotation: the old file gone (and how to find it next time), files gone
    before they were read, files compressed in a way that is not opened, files inflated only up to the cap."""
    en = [("the old file is gone (a log rotated into another folder or under a name of its own is found with "
           "watch --rotated-into DIR or --rotation-pattern REGEX)")] if lost else []
    zh = ["旧文件已经不在了（轮转到别的文件夹、或按自己的规则命名的日志，用 watch --rotated-into DIR 或 "
          "--rotation-pattern REGEX 就能找到）"] if lost else []
    if gone:
        en.append(f"{', '.join(gone)} went before it could be read")
        zh.append(f"{'、'.join(gone)} 还没来得及读就没了")
    if compressed:
        en.append(f"{', '.join(compressed)} compressed, not opened")
        zh.append(f"{'、'.join(compressed)} 已压缩，没有打开")
    if capped:
        en.append(f"{', '.join(capped)} inflated only up to the cap")
        zh.append(f"{'、'.join(capped)} 只解压到上限为止")
    return Words("; ".join(en), "；".join(zh))


#: the other things a follower says, as (English, Chinese) templates
_TOLD = {
    "race": ("{path}: the file was renamed or removed while it was being read ({why}); it is read again at the "
             "next poll (reported once)",
             "{path}：读取时文件被改名或删除了（{why}）；下次轮询时重新读取（只报告这一次）"),
    "gone": ("{path}: rotated off {name} between two polls, but gone before it could be read",
             "{path}：在两次轮询之间从 {name} 轮转出来，但还没来得及读就没了"),
    "whole": ("{path}: rotated more than once since the last poll; read {name} whole, which was never seen at "
              "the log's path", "{path}：上次轮询以来轮转了不止一次；完整读取了 {name}（它从没出现在日志的路径上）"),
    "compressed": ("{path}: rotated off {name} and compressed; it is not opened",
                   "{path}：从 {name} 轮转出来并已压缩；没有打开它"),
    "foreign": ("{path}: named like a rotated {name}, but {name}'s reader does not recognise its content; it was "
                "not read into {name}",
                "{path}：名字像是 {name} 轮转出来的文件，但 {name} 的读取器不认识它的内容；没有把它读进 {name}"),
    "unreadable": ("{path}: could not be read ({why})", "{path}：读不出来（{why}）"),
    "renamed": ("{path}: renamed on again and again while it was read; left unread",
                "{path}：读取时一再被改名；没有读它"),
    "lost": ("{path}: the steps after {a} and before {b} were not read: {why}",
             "{path}：第 {a} 步之后、第 {b} 步之前的步没有读到：{why_zh}"),
    "written": ("{why}; waiting for it to be written", "{why_zh}；等它写入"),
    "appear": ("{why}; waiting for it to appear", "{why_zh}；等它出现"),
    "wait": ("{path}: could not be read ({why}); waiting for it", "{path}：读不出来（{why}）；等待中"),
    "rewritten": ("{path}: rewritten in place (the same file, its earlier lines changed); read again whole, so "
                  "the run is what the file holds now (reported once)",
                  "{path}：文件被原地改写了（同一个文件，前面的行变了）；已整个重读，运行与文件现在的内容一致（只报告这一次）"),
    "stale": ("{path}: now points at {name}, last written before the log was last looked at: taken for another "
              "log, not this one's next segment; its {lines} lines are not read, only what is appended to it",
              "{path}：现在指向 {name}，它最后一次写入早于上次查看日志的时间：当作别的日志，而不是这份日志的下一段；"
              "它已有的 {lines} 行不读，只读之后追加的内容"),
    "capped": ("{path}: inflates to more than {cap} bytes; only its first {cap} bytes were read",
               "{path}：解压后超过 {cap} 字节；只读了前 {cap} 字节"),
    "trainings": ("{path}: the step count starts again: the log holds more than one training; it is read whole at "
                  "each change from now on, a run for each training", "{path}：步数重新开始了：这份日志里不止一次训练；"
                  "从现在起每次变化时整个重读，每次训练一个运行"),
}


def told(what: str, why: str = "", **fields: object) -> Words:
    """The message ``what`` of :data:`_TOLD`, with ``why`` in each language it has and the ``fields``."""
    en, zh = _TOLD[what]
    why_zh = why.zh if isinstance(why, Words) else why
    return Words(en.format(why=why, why_zh=why_zh, **fields), zh.format(why=why, why_zh=why_zh, **fields))
