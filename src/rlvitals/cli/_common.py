"""What the subcommands share: exit codes, output helpers, loading runs and pairing them with their rollouts."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

import orjson

from ..errors import RlvitalsError
from ..words import Words, both, in_lang
from ._options import COLUMN_OPTIONS, ROLLOUT_OPTIONS

if TYPE_CHECKING:
    from ..checks.config import DiagnoseConfig
    from ..rollout.options import RolloutSettings
    from ..run.run import Run

#: 0 ok; 1 a verdict reached --fail-on (or watch's --exit-on); 2 bad usage or an input that could not be read;
#: 3 rlvitals itself failed (a bug: the message says so, with the traceback to report)
EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

#: what starts every line the CLI says about a problem, per language
SAYS = {"en": "rlvitals: ", "zh": "rlvitals："}


def error_line(exc: RlvitalsError, lang: str = "en") -> str:
    """``exc`` as the CLI prints it: one line after the program's name, in ``lang``."""
    return f"{SAYS.get(lang, SAYS['en'])}{exc.text(lang)}\n"


def said_line(text: str, lang: str = "en") -> str:
    r"""``text`` (:class:`~rlvitals.words.Words` or plain) as the CLI prints a problem: one line after the
    program's name, in ``lang``.

    Example:
        >>> said_line(Words("--k 0: too small", "--k 0：太小"), "zh")
        'rlvitals：--k 0：太小\n'
    """
    return f"{SAYS.get(lang, SAYS['en'])}{in_lang(text, lang)}\n"


def _message(exc: Exception) -> str:
    """What ``exc`` says, its Chinese kept where it was written as :class:`~rlvitals.words.Words`."""
    said = exc.args[0] if exc.args else ""
    return said if isinstance(said, Words) else str(exc)


def lang_of(args: argparse.Namespace) -> str:
    """The language a command was asked to speak (``--lang``; English for a command without it)."""
    return str(getattr(args, "lang", "en"))



def width(out: IO[str]) -> int:
    """The terminal's width for a terminal (capped for readability), else a fixed width."""
    from ..render.console import WIDTH

    if out.isatty():
        return min(shutil.get_terminal_size((WIDTH, 24)).columns, 140)
    return WIDTH


def dump(obj: object) -> str:
    try:
        return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # a file name that is not UTF-8 (rare): escaped; only then are the renderers loaded
        from ..render import json_dumps

        return json_dumps(obj).decode()



def given_algorithm(args: argparse.Namespace) -> str | None:
    """``--algorithm``'s name when the catalog knows it (None when it was not given, or the command has no such
    option); else an RlvitalsError in both languages naming the flag, the name and the names there are (the
    command's usage error, in the user's language: argparse is told every name is a choice, see
    ``_options.AlgorithmNames``)."""
    name = getattr(args, "algorithm", None)
    if name is None:
        return None
    from ..catalog import load_catalog
    from ..run.detect import checked_algorithm

    return checked_algorithm(name, load_catalog(), "--algorithm ")


def load_all(paths: list[str], fmt: str | None, err: IO[str], progress: bool = False,
             one_run: bool = False, lang: str = "en", algorithm: str | None = None) -> tuple[list[Run], int]:
    """Every run under every path; an unreadable path is reported and the others still load. With
    ``one_run`` (``--one-run``), the paths are the logs of one run's launches, read as one run in step
    order (:func:`rlvitals.run.concat.load_launches`): a log that cannot be read fails the whole run, and
    what the joining did is said on ``err`` in ``lang``.
    With ``progress``, a terminal shows how far the reading got (:mod:`.progress`). ``algorithm``: what
    ``--algorithm`` says the runs are (:func:`rlvitals.run.load`'s)."""
    from ..run import load
    from .progress import reading

    runs: list[Run] = []
    status = EXIT_OK
    if one_run:
        from ..run import load_launches

        told: list[str] = []  # said after the progress display is gone
        try:
            with reading(err, progress, lang) as shown:
                runs.append(load_launches(paths, fmt, shown, lambda note: told.append(note.text(lang)),
                                          algorithm=algorithm))
        except RlvitalsError as exc:
            told, status = [exc.text(lang)], EXIT_USAGE
        head = f"{SAYS.get(lang, SAYS['en'])}--one-run{'：' if lang == 'zh' else ': '}"
        err.writelines(f"{head}{note}\n" for note in told)
        return runs, status
    for path in paths:
        try:
            with reading(err, progress, lang) as shown:
                runs.extend(load(path, fmt, shown, algorithm=algorithm))
        except RlvitalsError as exc:
            err.write(error_line(exc, lang))
            status = EXIT_USAGE
    return runs, status



def example_paths(folder: str) -> dict[str, Path]:
    from ..synthetic.simulate import write_example

    return write_example(Path(folder))



def rollout_settings(args: argparse.Namespace, rollouts: object = True) -> RolloutSettings:
    """The rollout options of any command (``_options.add_rollout_options``) as one ``RolloutSettings``,
    checked before any file is read; ``rollouts``: what ``--rollouts`` was given as (an option given
    without rollouts to apply it to is refused). RlvitalsError names the option and the fix."""
    from ..rollout.options import RolloutSettings
    given = [f"--{name}" for name in COLUMN_OPTIONS if getattr(args, f"col_{name}") is not None]
    given += [flag for flag, dest in ROLLOUT_OPTIONS.items() if getattr(args, dest) not in (None, False)]
    if given and not rollouts:
        raise RlvitalsError(Words(
            f"{', '.join(given)}: {'these options say' if len(given) > 1 else 'this option says'} "
            "how rollouts are read and analysed, but no --rollouts DIR was given; add --rollouts DIR "
            f"(the rollout dumps of the run) or drop {' and '.join(given)}",
            f"{'、'.join(given)}：{'这些选项' if len(given) > 1 else '这个选项'}规定怎样读取和分析 rollout，"
            "但没有给出 --rollouts DIR；请加上 --rollouts DIR（这次训练的 rollout 导出文件），"
            f"或者去掉 {' 和 '.join(given)}"))
    _check_rollout_flags(args)
    try:
        return RolloutSettings(ks=_parse_ks(args.k) if args.k is not None else RolloutSettings().ks,
                               columns=_column_flags(args), group_size=args.group_size,
                               reward_weights=_reward_weights(args.reward_weights), embed=args.embed,
                               tool_call_cap=args.tool_call_cap, max_response_length=args.max_response_length,
                               n_states=args.n_states, tool_schemas=_tool_schemas(args.tool_schema),
                               id_sources=tuple(args.id_sources or ()),
                               ood_sources=None if args.ood_sources is None else tuple(args.ood_sources),
                               engine=args.engine or "local", address=args.address, **_segment_tags(args))
    except (ValueError, TypeError) as exc:
        raise RlvitalsError(_message(exc)) from None


def _check_rollout_flags(args: argparse.Namespace) -> None:
    """The rollout options' own errors, in the words of the command line (the settings would name
    their Python fields)."""
    cap, limit, size = args.tool_call_cap, args.max_response_length, args.group_size
    if cap is not None and cap < 1:
        raise RlvitalsError(Words(f"--tool-cap {cap}: the cap is the most tool calls a rollout may make, "
                                  "a whole number >= 1",
                                  f"--tool-cap {cap}：上限是一个 rollout 最多能调用工具的次数，应为不小于 1 的整数"))
    if limit is not None and limit < 1:
        raise RlvitalsError(Words(f"--max-response-length {limit}: the limit is a number of tokens >= 1",
                                  f"--max-response-length {limit}：上限是 token 数，应不小于 1"))
    if args.n_states is not None and args.n_states < 1:
        raise RlvitalsError(Words(f"--n-states {args.n_states}: the size of the state space is the number of states "
                                  "the environment has, a whole number >= 1",
                                  f"--n-states {args.n_states}：状态空间的大小是环境的状态个数，应为不小于 1 的整数"))
    if size is not None and size < 1:
        raise RlvitalsError(Words(f"--group-size {size}: the group size is the number of rollouts per prompt, "
                                  "a whole number >= 1",
                                  f"--group-size {size}：组大小是每个 prompt 的 rollout 数，应为不小于 1 的整数"))
    if args.address is not None and args.engine != "ray":
        raise RlvitalsError(Words(f"--address {args.address}: the address of a Ray cluster needs --engine ray",
                                  f"--address {args.address}：Ray 集群的地址要和 --engine ray 一起用"))
    if args.ood_sources and not args.id_sources:
        raise RlvitalsError(Words("--ood-source needs --id-source: the gap is in-distribution minus "
                                  "out-of-distribution",
                                  "--ood-source 需要同时给出 --id-source：差距是分布内减去分布外"))
    twice = sorted(set(args.id_sources or ()) & set(args.ood_sources or ()))
    if twice:
        raise RlvitalsError(Words(f"--id-source and --ood-source both name {', '.join(twice)}: a data source is "
                                  "either in- or out-of-distribution; give it once",
                                  f"--id-source 和 --ood-source 都列出了 {'、'.join(twice)}：一个数据源要么在分布内，"
                                  "要么在分布外；只给一次"))


def _tool_schemas(path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    from ..rollout import read_tool_schemas

    return read_tool_schemas(path)


def _column_flags(args: argparse.Namespace) -> Any:
    mapping = {name: getattr(args, f"col_{name}") for name in COLUMN_OPTIONS if getattr(args, f"col_{name}")}
    if not mapping:
        return None
    from ..rollout.readers import ColumnFlags

    # as flags, so that a column the data lacks is reported as the option typed (--correct acc)
    return ColumnFlags(**mapping)


def _reward_weights(text: str | None) -> Any:
    if not text:
        return None
    from ..rollout.readers import parse_reward_weights

    return parse_reward_weights(text)


def _segment_tags(args: argparse.Namespace) -> dict[str, Any]:
    from ..rollout.tags import SegmentTags, parse_tag

    tags: dict[str, tuple[str, str]] = {}
    for flag, name in (("think", "think"), ("answer", "answer"), ("tool", "tool_call")):
        text = getattr(args, f"{flag}_tag")
        if text is not None:
            try:
                tags[name] = parse_tag(text)
            except ValueError as exc:
                raise RlvitalsError(both(f"--{flag}-tag ".__add__, _message(exc))) from None
    return {"segment_tags": SegmentTags(**tags)} if tags else {}


def _parse_ks(text: str) -> tuple[int, ...] | Literal["all"]:
    if text.strip() == "all":
        return "all"
    try:
        ks = tuple(sorted({int(k) for k in text.split(",") if k.strip()}))
    except ValueError:
        raise RlvitalsError(Words(f"--k {text!r}: expected comma-separated whole numbers like 1,2,4,8, or all",
                                  f"--k {text!r}：应为逗号分隔的整数（如 1,2,4,8），或者 all")) from None
    if not ks or ks[0] < 1:
        raise RlvitalsError(Words(f"--k {text!r}: every k must be at least 1", f"--k {text!r}：每个 k 都至少为 1"))
    return ks


def rollout_dirs(given: list[str] | str | None, paths: list[str], noun: str = "run") -> list[str | None]:
    """The rollout folder of each RUN (None for none): ``--rollouts`` pairs with the runs in order."""
    dirs = [given] if isinstance(given, str) else list(given or [])
    if not dirs:
        return [None] * len(paths)
    if len(dirs) != len(paths):
        said = noun.upper()  # as the usage line names them
        raise RlvitalsError(Words(
            f"{len(paths)} {noun}s given but {len(dirs)} --rollouts; the rollouts of one run are not "
            f"another's: give --rollouts once per {noun.upper()}, in the order of the {noun}s ('-' "
            f"for a {noun} without rollouts)",
            f"给了 {len(paths)} 个 {said}，却有 {len(dirs)} 个 --rollouts；一次训练的 rollout 不能用在另一次训练上："
            f"每个 {said} 给一次 --rollouts，按 {said} 的顺序给出（没有 rollout 的 {said} 写 '-'）"))
    return [None if d == "-" else d for d in dirs]



def diagnose_config(args: argparse.Namespace) -> DiagnoseConfig | None:
    """The checks' settings a command asks for: its ``--config`` file, with ``--target-score`` (the score the
    user wants, read by the ceiling check) over it; RlvitalsError for a bad file. Without either nothing is
    imported: a large log's reading worker is forked before the checks (and numpy, polars) are."""
    path, target = getattr(args, "config", None), getattr(args, "target_score", None)
    if path is None and target is None:
        return None
    from ..checks.config import DiagnoseConfig, load_config

    config = load_config(path) if path else None
    if target is None:
        return config
    return (config or DiagnoseConfig()).with_params("entropy_ceiling", target=float(target))


def runs_for_output(args: argparse.Namespace, err: IO[str]) -> tuple[list[Run], Any, list[Any], int] | None:
    """What ``report`` and ``export`` start from: the runs with their own rollouts' series joined, the
    config, each run's rollout analysis (or None) and the load status; None after a usage error (already
    written)."""
    try:
        config = diagnose_config(args)
        settings = rollout_settings(args, args.rollouts)
    except RlvitalsError as exc:
        err.write(error_line(exc, lang_of(args)))
        return None
    paired = paired_runs(list(args.paths), args.rollouts, args.fmt, err, settings, progress=True,
                         one_run=args.one_run, lang=args.lang, algorithm=args.algorithm)
    if paired is None or not paired[0]:
        return None
    runs, analyses, status = paired
    return runs, config, [None if a is None else a[1] for a in analyses], status



def paired_runs(paths: list[str], rollouts: list[str] | None, fmt: str | None, err: IO[str],
                settings: RolloutSettings | None = None, progress: bool = False, one_run: bool = False,
                lang: str = "en", algorithm: str | None = None) -> tuple[list[Run], list[Any], int] | None:
    """The runs of ``paths`` with their own rollouts' series joined (``--rollouts`` pairs with the
    paths in order; each read and analysed with ``settings``), each run's (rollout folder, analysis)
    or None, and the load status; None after a usage error (already written). With ``one_run`` the
    paths are one run's launches, and one ``--rollouts`` goes with that run."""
    from .progress import analysed

    groups = [paths] if one_run else [[path] for path in paths]
    try:
        if one_run and rollouts and len(rollouts) > 1:
            raise RlvitalsError(Words(
                f"--one-run reads the {len(paths)} PATHs as one run, which takes one --rollouts DIR "
                f"(the run's rollout folder), not {len(rollouts)}",
                f"--one-run 把这 {len(paths)} 个 PATH 当作同一次训练读取，只能配一个 --rollouts DIR"
                f"（这次训练的 rollout 文件夹），而不是 {len(rollouts)} 个"))
        dirs = rollout_dirs(rollouts, [" + ".join(g) for g in groups])
        analyses = [analysed(d, settings, err, progress, lang) if d else None for d in dirs]
    except RlvitalsError as exc:
        err.write(error_line(exc, lang))
        return None
    runs: list[Run] = []
    paired: list[Any] = []
    status = EXIT_OK
    for group, folder, analysis in zip(groups, dirs, analyses, strict=True):
        path = group[0]
        found, code = load_all(group, fmt, err, progress, one_run, lang, algorithm)
        status = max(status, code)
        if analysis is not None and len(found) > 1:
            err.write(said_line(Words(
                f"{path} holds {len(found)} runs, so its --rollouts cannot be paired with one of "
                "them; pass its run folders as separate RUNs, each with its own --rollouts",
                f"{path} 里有 {len(found)} 次训练，它的 --rollouts 无法对应到其中某一次；请把每次训练的文件夹"
                "分别作为 RUN 传入，各配自己的 --rollouts"), lang))
            return None
        origin = Words(f"rollouts in {folder}", f"{folder} 里的 rollout")
        runs += [analysis.join(run, origin) if analysis is not None else run for run in found]
        paired += [(folder, analysis) if analysis is not None else None] * len(found)
    return runs, paired, status
