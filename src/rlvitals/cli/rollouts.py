"""Subcommands about rollouts: ``rollouts`` (the metrics of dumps) and ``sample`` (dumps from a real model)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import IO, Any, Literal

from ..errors import RlvitalsError
from ._common import EXIT_OK, EXIT_USAGE, analyze, dump, width


def _rollout_options(args: argparse.Namespace, ks: tuple[int, ...]) -> dict[str, Any]:
    """The analysis settings of ``rlvitals rollouts``, checked before any file is read (ValueError)."""
    from ..rollout.analysis import RolloutOptions
    from ..rollout.segments import SegmentTags, parse_tag

    if args.tool_call_cap is not None and args.tool_call_cap < 1:
        raise ValueError(f"--tool-cap {args.tool_call_cap}: the cap is the most tool calls a rollout may make, "
                         "a whole number >= 1")
    if args.max_response_length is not None and args.max_response_length < 1:
        raise ValueError(f"--max-response-length {args.max_response_length}: the limit is a number of tokens >= 1")
    if args.ood_sources and not args.id_sources:
        raise ValueError("--ood-source needs --id-source: the gap is in-distribution minus out-of-distribution")
    options: dict[str, Any] = {"tool_call_cap": args.tool_call_cap, "id_sources": tuple(args.id_sources or ()),
                               "ood_sources": None if args.ood_sources is None else tuple(args.ood_sources),
                               "max_response_length": args.max_response_length}
    tags: dict[str, tuple[str, str]] = {}
    for flag, field_ in (("think", "think"), ("answer", "answer"), ("tool", "tool_call")):
        text = getattr(args, f"{flag}_tag")
        if text is not None:
            try:
                tags[field_] = parse_tag(text)
            except ValueError as exc:
                raise ValueError(f"--{flag}-tag {exc}") from None
    if tags:
        options["segment_tags"] = SegmentTags(**tags)
    RolloutOptions(ks=ks, **options)
    return options


def _parse_ks(text: str) -> tuple[int, ...] | Literal["all"]:
    if text.strip() == "all":
        return "all"
    try:
        ks = tuple(sorted({int(k) for k in text.split(",") if k.strip()}))
    except ValueError:
        raise RlvitalsError(f"--k {text!r}: expected comma-separated whole numbers like 1,2,4,8, or all") from None
    if not ks or ks[0] < 1:
        raise RlvitalsError(f"--k {text!r}: every k must be at least 1")
    return ks



def _rollouts(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..render_text import render_rollouts
    from ..rollout.readers import ColumnFlags, parse_reward_weights
    from ..summary import rollout_summary

    try:
        ks = _parse_ks(args.k)
        weights = parse_reward_weights(args.reward_weights) if args.reward_weights else None
        mapping = {name[4:]: value for name, value in vars(args).items() if name.startswith("col_") and value}
        # as flags, so that a column the data lacks is reported as the option typed (--correct acc)
        columns = ColumnFlags(**mapping) if mapping else None
        options = _rollout_options(args, (1,) if ks == "all" else ks)
    except (RlvitalsError, ValueError, TypeError) as exc:
        err.write(f"rlvitals: {exc}\n")
        return EXIT_USAGE
    status, docs = EXIT_OK, []
    for path in args.paths:
        try:
            analysis = analyze(path, columns, ks, args.group_size, weights, args.embed, **options)
        except RlvitalsError as exc:
            err.write(f"rlvitals: {exc}\n")
            status = EXIT_USAGE
            continue
        # the k computed ('all' resolves per path); none when the group family was not computed
        shown = analysis.ks or (ks if ks != "all" else (1,))
        doc = rollout_summary(analysis, path, shown)
        docs.append(doc)
        if not args.json:
            out.write(render_rollouts(doc, shown, out.isatty(), width(out)))
    # the shape follows the paths asked for, so a failed path does not change the schema
    if args.json and docs:
        out.write(dump(docs[0] if len(args.paths) == 1 else {"runs": docs}) + "\n")
    return status



def _sample(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..rollout.writers import write_trl_completions, write_verl_dump
    from ..sampler import check_sampling, load_policy, sample_steps

    root, written, rollouts, correct = Path(args.out), dict[str, Path](), 0, 0
    try:
        check_sampling(samples=args.samples, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                       steps=args.steps, prompts=args.prompts)
        policy = load_policy()
        for step, records in sample_steps(policy, steps=args.steps, prompts=args.prompts, samples=args.samples,
                                          max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                                          seed=args.seed):
            if args.fmt in ("verl", "both"):
                written["veRL rollout dump"] = write_verl_dump(records, root / "verl", step).parent
            if args.fmt in ("trl", "both"):
                written["TRL completions"] = write_trl_completions(records, root / "trl", step).parent
            rollouts += len(records)
            correct += sum(bool(r["correct"]) for r in records)
    except RlvitalsError as exc:
        err.write(f"rlvitals: {exc}\n")
        return EXIT_USAGE
    how = "from the float32 cache" if policy.cached else "dequantized from GGUF and cached"
    out.write(f"sampled {rollouts} rollouts from {policy.name} (loaded {how} in {policy.load_seconds:.1f} s): "
              f"{correct} correct ({correct / rollouts:.0%})\n")
    for kind, folder in written.items():
        out.write(f"wrote {kind}: {folder} ({args.steps} step file(s))\n")
    return EXIT_OK



#: subcommand → handler
COMMANDS = {"rollouts": _rollouts, "sample": _sample}
