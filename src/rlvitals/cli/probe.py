"""``rlvitals probe``: faithfulness probes on a sample of rollouts, against an OpenAI-compatible endpoint
(``--base-url URL --model NAME``) or a transformers model in process (``--local PATH``).

The parser imports this module for the options, so it imports the rest of the CLI only when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..errors import RlvitalsError
from ..words import Words, in_lang
from ._options import add_lang, add_probe_options

if TYPE_CHECKING:
    from ..probe import Backend, Cache, ProbeOptions

__all__ = ["COMMANDS", "add_probe", "open_backend", "probe_options"]

EXAMPLES = ("rlvitals probe rollout_data_dir/ --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-1.5B-Instruct",
            "rlvitals probe rollout_data_dir/ --local ./my-checkpoint --max-rollouts 16 --json",
            "rlvitals probe completions/ --base-url http://localhost:8000/v1 --model m --api chat --samples 8")


def add_probe(sub: Any) -> None:
    """The ``probe`` subcommand's options (``sub``: the parser's command adder)."""
    pro = sub.add("probe", help="faithfulness probes: does an answer depend on its reasoning? (asks a model)")
    pro.add_argument("rollouts", metavar="ROLLOUTS", help="a rollout dump (file or folder) to sample from")
    add_probe_options(pro, "on a sample of ROLLOUTS")
    pro.add_argument("--samples", type=int, metavar="N", default=0, help="answers resampled per question for "
                     "self-consistency, maj@N − pass@1 (default: 0, none)")
    pro.add_argument("--temperature", type=float, metavar="T", default=0.7, help="temperature of the resampled answers "
                     "(default: 0.7)")
    pro.add_argument("--out", default=None, metavar="FILE", help="where the per-step results go (default: "
                     "rlvitals-probes.jsonl beside the rollouts)")
    pro.add_argument("--json", action="store_true", help="print one JSON object with every figure")
    add_lang(pro, help="language of the summary")


def probe_options(args: argparse.Namespace, who: str = "probe") -> ProbeOptions:
    """The probe options of ``probe`` or ``watch --probe-every`` (``who``, as the error names it), checked: a model
    (a server or ``--local``), known probes, budgets that can work. RlvitalsError names the flags and the fix."""
    from ..probe import PROBES, ProbeOptions

    if (args.local is None) == (args.base_url is None) or (args.base_url is not None and not args.model):
        raise RlvitalsError(Words(f"{who} needs a model: --base-url URL --model NAME (a server), or --local PATH",
                                  f"{who} 需要一个模型：--base-url URL --model NAME（服务器），或 --local PATH"))
    probes = [p.strip() for p in args.probes.split(",") if p.strip()]
    unknown = sorted(set(probes) - set(PROBES))
    if unknown or not probes:
        raise RlvitalsError(Words(f"--probes {args.probes!r}: expected some of {', '.join(PROBES)}",
                                  f"--probes {args.probes!r}：应为 {', '.join(PROBES)} 中的若干个"))
    samples, temperature = getattr(args, "samples", 0), getattr(args, "temperature", 0.7)
    if args.max_rollouts < 1 or args.max_tokens < 1 or samples < 0 or temperature < 0:
        said = f"--max-rollouts {args.max_rollouts} --max-tokens {args.max_tokens}"
        said += f" --samples {samples} --temperature {temperature}" if hasattr(args, "samples") else ""
        raise RlvitalsError(Words(f"{said}: expected at least 1 rollout and 1 token, 0 or more samples and a "
                                  "temperature of 0 or more",
                                  f"{said}：至少 1 条 rollout、1 个 token，样本数和温度不能为负"))
    return ProbeOptions(probes=tuple(probes), api=args.api, max_tokens=args.max_tokens, samples=samples,
                        temperature=temperature, mistake=args.mistake)


def open_backend(args: argparse.Namespace) -> tuple[Backend, Cache | None]:
    """The backend the probe options name (``--local`` in process, else the server), behind the reply cache unless
    ``--no-cache``; the cache, to close and count. A model folder is loaded here."""
    from ..probe import Cache, Cached, HttpBackend, LocalBackend

    backend: Backend = (LocalBackend(Path(args.local)) if args.local else
                        HttpBackend(args.base_url, args.model, timeout=args.timeout, retries=args.retries,
                                    concurrency=args.concurrency))
    if args.no_cache:
        return backend, None
    cache = Cache(_cache_path(args))
    return Cached(backend, cache), cache


def _cache_path(args: argparse.Namespace) -> Path:
    if args.cache:
        return Path(args.cache)
    from ..catalog import cache_root

    return cache_root() / "probe.sqlite"


def _out_path(args: argparse.Namespace) -> Path:
    if args.out:
        return Path(args.out)
    from ..rollout import PROBES_FILE

    source = Path(args.rollouts)
    return (source if source.is_dir() else source.parent) / PROBES_FILE


def _probe(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..probe import run_probe, verifier_for, write_steps
    from ..render.probe import render_probe
    from ..synthetic.word_problems import known_states
    from ._common import EXIT_OK, EXIT_USAGE, dump, error_line
    from .progress import working

    cache = None
    try:
        options = probe_options(args)
        backend, cache = open_backend(args)
        with working(err, "probe", not args.json) as told:
            result = run_probe(args.rollouts, backend, options, max_rollouts=args.max_rollouts, progress=told,
                               verifier=verifier_for(args.verify, known_states))
        if cache is not None:
            result["cache"] = {"path": str(_cache_path(args)), "hits": cache.hits, "misses": cache.misses}
        target = _out_path(args)
        write_steps(result, target)
    except RlvitalsError as exc:
        err.write(error_line(exc, args.lang))
        if cache is not None and cache.stored:  # a server gone mid-run: what it answered is not asked again
            err.write(in_lang(Words(f"  the {cache.stored} replies received are kept in {_cache_path(args)}; the same "
                                    "command goes on from there",
                                    f"  已收到的 {cache.stored} 条回复保存在 {_cache_path(args)}；再运行同一条命令即可"
                                    "从那里继续"), args.lang) + "\n")
        return EXIT_USAGE
    finally:
        if cache is not None:
            cache.close()
    result["written"] = str(target)
    out.write(dump(result) + "\n" if args.json else render_probe(result, args.lang, str(target)))
    return EXIT_OK


#: subcommand → handler
COMMANDS = {"probe": _probe}
