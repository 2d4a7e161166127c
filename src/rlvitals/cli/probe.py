"""``rlvitals probe``: faithfulness probes on a sample of rollouts, against an OpenAI-compatible endpoint
(``--base-url URL --model NAME``) or a transformers model in process (``--local PATH``).

The parser imports this module for the options, so it imports the rest of the CLI only when it runs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import IO, Any

from ..errors import RlvitalsError
from ..words import Words, in_lang
from ._options import add_lang

__all__ = ["COMMANDS", "add_probe"]

EXAMPLES = ("rlvitals probe rollout_data_dir/ --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-1.5B-Instruct",
            "rlvitals probe rollout_data_dir/ --local ./my-checkpoint --max-rollouts 16 --json",
            "rlvitals probe completions/ --base-url http://localhost:8000/v1 --model m --api chat --samples 8")


def add_probe(sub: Any) -> None:
    """The ``probe`` subcommand's options (``sub``: the parser's command adder)."""
    from ..probe import PROBES, VERIFIERS

    pro = sub.add("probe", help="faithfulness probes: does an answer depend on its reasoning? (asks a model)")
    pro.add_argument("rollouts", metavar="ROLLOUTS", help="a rollout dump (file or folder) to sample from")
    pro.add_argument("--base-url", default=None, metavar="URL", help="an OpenAI-compatible server's root, e.g. http://host:8000/v1")
    pro.add_argument("--model", default=None, metavar="NAME", help="the model name the server serves (with --base-url)")
    pro.add_argument("--local", default=None, metavar="PATH_OR_GGUF",
                     help="a transformers model folder or a .gguf file, run in this process instead of a server")
    pro.add_argument("--api", choices=("completions", "chat"), default="completions",
                     help="which API the probes use (default: completions)")
    pro.add_argument("--probes", default=",".join(PROBES), metavar="LIST",
                     help=f"comma-separated, of {', '.join(PROBES)} "
                     "(default: all)")
    pro.add_argument("--max-rollouts", type=int, metavar="N", default=32, help="rollouts probed, spread over the steps "
                     "(default: 32)")
    pro.add_argument("--max-tokens", type=int, metavar="N", default=64, help="new tokens per generation (default: 64)")
    pro.add_argument("--samples", type=int, metavar="N", default=0, help="answers resampled per question for "
                     "self-consistency, maj@N − pass@1 (default: 0, none)")
    pro.add_argument("--temperature", type=float, metavar="T", default=0.7, help="temperature of the resampled answers "
                     "(default: 0.7)")
    pro.add_argument("--mistake", choices=("numeric", "model"), default="numeric",
                     help="how a mistake is added: a changed number, or one the model writes (default: numeric)")
    pro.add_argument("--verify", choices=VERIFIERS, default="arithmetic",
                     help="how intermediate steps are checked: every a op b = c exactly; word-problems adds the "
                     "bundled word problems' known intermediate values (default: arithmetic)")
    pro.add_argument("--concurrency", type=int, metavar="N", default=4,
                     help="requests in flight at once (default: 4)")
    pro.add_argument("--retries", type=int, metavar="N", default=3,
                     help="retries of a failed request, with backoff (default: 3)")
    pro.add_argument("--timeout", type=float, metavar="SECONDS", default=120.0,
                     help="seconds per request (default: 120)")
    pro.add_argument("--cache", default=None, metavar="FILE",
                     help="the reply cache (default: $RLVITALS_CACHE/probe.sqlite, else "
                          "~/.cache/rlvitals/probe.sqlite)")
    pro.add_argument("--no-cache", action="store_true", help="send every request, keep nothing")
    pro.add_argument("--out", default=None, metavar="FILE", help="where the per-step results go (default: "
                     "rlvitals-probes.jsonl beside the rollouts)")
    pro.add_argument("--json", action="store_true", help="print one JSON object with every figure")
    add_lang(pro, help="language of the summary")


def _check(args: argparse.Namespace) -> list[str]:
    from ..probe import PROBES

    if (args.local is None) == (args.base_url is None) or (args.base_url is not None and not args.model):
        raise RlvitalsError(Words("probe needs a model: --base-url URL --model NAME (a server), or --local PATH",
                                  "probe 需要一个模型：--base-url URL --model NAME（服务器），或 --local PATH"))
    probes = [p.strip() for p in args.probes.split(",") if p.strip()]
    unknown = sorted(set(probes) - set(PROBES))
    if unknown or not probes:
        raise RlvitalsError(Words(f"--probes {args.probes!r}: expected some of {', '.join(PROBES)}",
                                  f"--probes {args.probes!r}：应为 {', '.join(PROBES)} 中的若干个"))
    if args.max_rollouts < 1 or args.max_tokens < 1 or args.samples < 0 or args.temperature < 0:
        raise RlvitalsError(Words(
            f"--max-rollouts {args.max_rollouts} --max-tokens {args.max_tokens} --samples {args.samples} "
            f"--temperature {args.temperature}: expected at least 1 rollout and 1 token, 0 or more samples "
            "and a temperature of 0 or more",
            f"--max-rollouts {args.max_rollouts} --max-tokens {args.max_tokens} --samples {args.samples} "
            f"--temperature {args.temperature}：至少 1 条 rollout、1 个 token，样本数和温度不能为负"))
    return probes


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
    from ..probe import Cache, Cached, HttpBackend, LocalBackend, ProbeOptions, run_probe, verifier_for, write_steps
    from ..render.probe import render_probe
    from ..synthetic.word_problems import known_states
    from ._common import EXIT_OK, EXIT_USAGE, dump, error_line
    from .progress import working

    cache = None
    try:
        probes = _check(args)
        backend: Any = (LocalBackend(Path(args.local)) if args.local else
                        HttpBackend(args.base_url, args.model, timeout=args.timeout, retries=args.retries,
                                    concurrency=args.concurrency))
        if not args.no_cache:
            cache = Cache(_cache_path(args))
            backend = Cached(backend, cache)
        options = ProbeOptions(probes=tuple(probes), api=args.api, max_tokens=args.max_tokens, samples=args.samples,
                               temperature=args.temperature, mistake=args.mistake)
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
