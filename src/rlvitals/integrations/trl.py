"""TRL: a ``TrainerCallback`` that feeds a :class:`~rlvitals.watch.monitor.Monitor` from inside the Trainer.

It reads only what transformers hands every callback (``args``, ``state``, ``control``, ``logs`` and
the documented keyword arguments: ``model``, ``processing_class``, ``optimizer``, ``lr_scheduler``,
``train_dataloader``, ``eval_dataloader``) and the files TRL writes; no private attribute of the
trainer. At each ``on_log`` (rank 0 only) the logged metrics go to the Monitor at
``state.global_step``. A ``GRPOTrainer`` with ``log_completions=True`` writes the step's completions to
``<output_dir>/completions/completions_{step:05d}.parquet`` just *after* ``on_log`` (TRL 1.16,
``GRPOTrainer.log``: ``super().log(...)``, then ``to_parquet``). So the callback reads that file at the
next event of the Trainer (the next step's ``on_step_begin``, an evaluation's first
``on_prediction_step`` or ``on_log``, ``on_save``, ``on_train_end``: all come before an evaluation at
the same step overwrites the file, and while ``state.global_step`` is still that step). It
analyses the completions (:meth:`Monitor.derive`; the score is TRL's, the reward functions weighted
by ``args.reward_weights``), and, once :func:`attach` told it the trainer's callbacks, hands the
chosen ``rlvitals/<key>`` values to the trainer's ``report_to`` loggers (their public ``on_log``) at
that same step. TensorBoard and W&B show them as ``train/rlvitals/...``.

``log_keys`` chooses what is written to the loggers: by default :data:`DEFAULT_LOG_KEYS`; any
per-step rollout key (``pass@4``, ``diversity/edit_distance``...; with or without ``rlvitals/``), or
``"all"``. A name the catalog does not know is refused at once. A chosen key the completions did not
give (``pass@8`` of groups of 4) is said once, with the keys they gave. The Monitor gets every key
whatever ``log_keys`` says.

>>> args = GRPOConfig(report_to=["tensorboard"], log_completions=True)                   # doctest: +SKIP
>>> trainer = GRPOTrainer(model=..., args=args, ...)                                   # doctest: +SKIP
>>> cb = attach(trainer, sinks=["jsonl:alerts.jsonl"], log_keys=["pass@1", "pass@4"])  # doctest: +SKIP
>>> trainer.train(); [f.check for f in cb.monitor.findings() if f.status == "fail"]  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from transformers import TrainerCallback

from ..errors import ProbeError, UnknownMetricError
from ..probe import Backend, PeriodicProbe, ProbeOptions, ProbeWorker, due
from ..rollout import PROBES_FILE, RolloutSet
from ..watch import PREFIX
from ..watch.monitor import Monitor
from ..words import Words, in_lang

__all__ = ["DEFAULT_LOG_KEYS", "ProbeModel", "RlvitalsCallback", "attach", "log_key_names", "probe_plan"]

#: what answers the probes: a local model folder or GGUF file, a backend, or a function that makes one
ProbeModel = str | Path | Backend | Callable[[], Backend]

#: what the callback writes to the trainer's loggers unless told otherwise: the share of prompt groups that
#: teach nothing (every completion scored alike), how often a completion is correct, and how alike the
#: completions are
DEFAULT_LOG_KEYS = ("group/zero_std/share", "pass@1", "diversity/distinct_2", "diversity/duplicate_rate")

#: keys of the summary ``Trainer.train`` logs once at the end; it is not a training step
_SUMMARY = ("train_runtime", "train_samples_per_second", "train_steps_per_second")


def log_key_names(log_keys: Sequence[str] | Literal["all"]) -> tuple[str, ...] | None:
    """``log_keys`` as ``rlvitals/<key>`` names (None: every key), each a metric of the catalog;
    UnknownMetricError names the ones that are not.

    Example:
        >>> log_key_names(["pass@4", "rlvitals/group/zero_std/share"])
        ('rlvitals/pass@4', 'rlvitals/group/zero_std/share')
        >>> log_key_names(["pass_at_4"])
        Traceback (most recent call last):
        ...
        rlvitals.errors.UnknownMetricError: log_keys: 'pass_at_4' is not a metric rlvitals knows; ...
    """
    from ..catalog.catalog import load_catalog

    if log_keys == "all":
        return None
    if isinstance(log_keys, str) or not all(isinstance(k, str) for k in log_keys):
        raise UnknownMetricError(Words(f"log_keys={log_keys!r}: expected a list of metric names such as "
                                       f"{list(DEFAULT_LOG_KEYS)}, or 'all'",
                                       f"log_keys={log_keys!r}：应为指标名的列表，例如 {list(DEFAULT_LOG_KEYS)}，"
                                       "或者 'all'"))
    names = tuple(dict.fromkeys(k.removeprefix(PREFIX) for k in log_keys))
    catalog = load_catalog()
    unknown = [k for k in names if catalog.find(k) is None]
    if unknown:
        like = (*DEFAULT_LOG_KEYS, "pass@4", "g_pass@4", "maj@4", "group/effective_batch", "diversity/edit_distance",
                "prompt/difficulty/hard/share", "rollout/format_compliance")
        raise UnknownMetricError(Words(
            f"log_keys: {', '.join(map(repr, unknown))} {'is' if len(unknown) == 1 else 'are'} not a metric "
            f"rlvitals knows; the rollout metrics it can log are named like {', '.join(like)} (every one: the "
            "'Per-step keys' of docs/rollouts.md, or 'rlvitals explain --list'); log_keys='all' logs every key the "
            "completions give",
            f"log_keys：{'、'.join(map(repr, unknown))} 不是 rlvitals 认识的指标；它能记录的 rollout 指标名形如 "
            f"{'、'.join(like)}（完整列表见 docs/rollouts.md 的 'Per-step keys' 一节，或运行 'rlvitals explain "
            "--list'）；log_keys='all' 会记录 completions 给出的每一个键"))
    return tuple(PREFIX + k for k in names)


class RlvitalsCallback(TrainerCallback):
    """Feeds the Trainer's logs and GRPO completions to a Monitor; after :meth:`attach`, writes the
    ``log_keys`` of each step's rollout metrics to the trainer's loggers at that step.

    ``monitor``: your own :class:`Monitor` (flushed, not closed, at the end of training), else one is
    made with ``monitor_kwargs`` (and closed at the end). ``log_keys``: see the module; checked here,
    before anything else is made. The completions are analysed in the Trainer's thread
    (:meth:`Monitor.derive`: milliseconds for one step's completions), so it never waits for the
    Monitor's thread, which may be in the middle of a diagnosis. ``probe_every``: at every that many steps
    (steps N, 2N …), that step's completions are probed for faithfulness (L6, as ``rlvitals probe`` does) by
    ``probe_model`` (:func:`probe_plan`), with ``probe_options``, at most ``probe_rollouts`` of them, in a thread
    of their own (the Trainer never waits for it); the results go to ``<output_dir>/rlvitals-probes.jsonl`` and
    the Monitor joins that file by step (:meth:`Monitor.log_probe_results`). At the end of training the probes
    still running are waited for ``probe_wait`` seconds at most, so that they reach the last diagnosis.

    Example:
        >>> cb = RlvitalsCallback(err=None, log_keys=["pass@1"])
        >>> cb.monitor.close(); cb.log_keys, cb.logged_steps
        (('rlvitals/pass@1',), [])
    """

    def __init__(self, monitor: Monitor | None = None, *, log_keys: Sequence[str] | Literal["all"] = DEFAULT_LOG_KEYS,
                 save_on_stop: bool = True, probe_every: int | None = None, probe_model: ProbeModel | None = None,
                 probe_options: ProbeOptions | None = None, probe_rollouts: int = 8, probe_wait: float = 300.0,
                 **monitor_kwargs: Any) -> None:
        self.log_keys = log_key_names(log_keys)
        #: how the completions are probed every ``probe_every`` steps (None: not probed); checked here
        self.probe = probe_plan(probe_every, probe_model, probe_options, probe_rollouts)
        self.probe_wait = probe_wait
        self.prober: ProbeWorker | None = None  # made at the first step probed, writing beside output_dir
        self.own_monitor = monitor is None
        self.monitor = monitor if monitor is not None else Monitor(framework="trl", **monitor_kwargs)
        self.save_on_stop = save_on_stop
        self.stopped_at: int | None = None  # the step at which it asked the Trainer to stop
        self.logged_steps: list[int] = []
        #: step -> the rlvitals/ keys handed to the loggers at that step
        self.written: dict[int, list[str]] = {}
        self.callbacks: list[Any] | None = None  # the trainer's callbacks, once attached
        self._pending: tuple[int, Path] | None = None
        self._told: set[str] = set()

    def attach(self, trainer: Any) -> RlvitalsCallback:
        """Put this callback first among ``trainer``'s callbacks (``trainer.callback_handler.callbacks``),
        so that at the end of training it hands the last step's metrics to the loggers before they
        close, and remember that list, to find the ``report_to`` loggers in it."""
        callbacks = trainer.callback_handler.callbacks
        if self in callbacks:
            callbacks.remove(self)
        callbacks.insert(0, self)
        self.callbacks = callbacks
        return self

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> None:
        if logs is None or not state.is_world_process_zero:
            return
        self._guarded(state, lambda: self._read_pending(args, state, control, kwargs))
        self._guarded(state, self._say_probes)
        if any(k in logs for k in _SUMMARY):
            return
        self._guarded(state, lambda: self._log(args, int(state.global_step), logs))

    def _log(self, args: Any, step: int, logs: dict[str, Any]) -> None:
        self.monitor.log(step, logs)
        self.logged_steps.append(step)
        if any(k.startswith("eval_") for k in logs):  # eval completions are no training rollouts
            return
        if getattr(args, "log_completions", False):
            self._pending = (step, Path(args.output_dir) / "completions" / f"completions_{step:05d}.parquet")
        elif hasattr(args, "log_completions"):  # a GRPOConfig that writes no completions
            self._tell("no completions", Words(
                "GRPOConfig(log_completions=False): TRL writes no completion files, so no rollout metrics are "
                "computed; pass log_completions=True",
                "GRPOConfig(log_completions=False)：TRL 不写 completion 文件，因此不会计算 rollout 指标；"
                "请传入 log_completions=True"))
        if self.callbacks is None and hasattr(args, "log_completions"):
            self._tell("not attached", Words(
                "the callback was not attached with rlvitals.integrations.trl.attach(trainer): rlvitals/... metrics "
                "are not written to the trainer's loggers",
                "这个 callback 没有用 rlvitals.integrations.trl.attach(trainer) 挂到 trainer 上：rlvitals/... 指标"
                "不会写入 trainer 的 logger"))

    def _read_pending(self, args: Any, state: Any, control: Any, kwargs: dict[str, Any]) -> None:
        """Analyse the completion file TRL wrote after the last training log and, when attached, hand the
        chosen keys to the ``report_to`` loggers at that log's step."""
        if self._pending is None or not state.is_world_process_zero:
            return
        from ..rollout.readers import read_rollouts

        step, path = self._pending
        self._pending = None
        if not path.is_file():
            self._tell("no file", Words(f"{path}: TRL did not write this completion file; the rollout metrics of "
                                        f"step {step} are missing",
                                        f"{path}：TRL 没有写出这个 completion 文件；第 {step} 步的 rollout 指标缺失"))
            return
        rollouts = read_rollouts(path, reward_weights=getattr(args, "reward_weights", None))
        derived = self.monitor.derive(step, rollouts)
        if self.probe is not None and due(step, self.probe.every):
            self._probe_step(args, step, rollouts)
        if self.callbacks is None or not derived:
            return
        chosen = {k: v for k, v in derived.items() if self.log_keys is None or k in self.log_keys}
        missing = [k for k in self.log_keys or () if k not in derived]
        if missing:
            self._tell("keys not derived", Words(
                f"log_keys {missing}: the completions of step {step} gave no such value (they gave "
                f"{sorted(derived)}); the others are logged",
                f"log_keys {missing}：第 {step} 步的 completions 没有给出这些值（给出的是 {sorted(derived)}）；"
                "其余的键照常记录"))
        if int(state.global_step) != step:  # no event of the Trainer came between two training logs
            self._tell("late", Words(
                f"the completions of step {step} were read at step {state.global_step}: their rlvitals/... metrics "
                "went to the Monitor, not to the loggers (they would be plotted at the wrong step)",
                f"第 {step} 步的 completions 到第 {state.global_step} 步才读到：它们的 rlvitals/... 指标只交给了 "
                "Monitor，没有交给 logger（否则会画在错误的步上）"))
            return
        if not chosen:
            return
        self._hand_to_loggers(args, state, control, chosen, kwargs)
        self.written[step] = sorted(chosen)

    def _hand_to_loggers(self, args: Any, state: Any, control: Any, values: dict[str, float],
                         kwargs: dict[str, Any]) -> None:
        from transformers.integrations import integration_utils

        # the logger callbacks transformers adds for report_to (TensorBoardCallback, WandbCallback...)
        kinds = tuple(integration_utils.get_reporting_integration_callbacks(args.report_to))  # type: ignore[no-untyped-call]
        public = {k: v for k, v in kwargs.items() if k != "logs"}
        for callback in self.callbacks or ():
            if kinds and isinstance(callback, kinds):
                callback.on_log(args, state, control, logs=dict(values), **public)

    def _probe_step(self, args: Any, step: int, rollouts: RolloutSet) -> None:
        """Hand the step's completions to the probing thread (it returns at once); its results go to
        ``<output_dir>/rlvitals-probes.jsonl``, and the Monitor reads that file each time it is written."""
        import polars as pl

        if self.prober is None and self.probe is not None:
            self.prober = ProbeWorker(self.probe, Path(args.output_dir) / PROBES_FILE,
                                      on_written=self.monitor.log_probe_results, name="rlvitals-trl-probe")
        if self.prober is not None:
            table = rollouts.table.with_columns(pl.lit(step, dtype=pl.Int64).alias("step"))
            self.prober.submit(step, replace(rollouts, table=table))

    def _say_probes(self) -> None:
        """What the probing thread has to say: a failure counted as the Monitor's errors, the rest said."""
        if self.prober is None:
            return
        failed = set(self.prober.failures)
        for message in self.prober.messages():
            if message in failed:
                self.monitor.report_error(in_lang(message, self.monitor.lang), kind=f"probe {message[:30]}")
            else:
                self.monitor.say(in_lang(message, self.monitor.lang))

    def _tell(self, kind: str, message: Words) -> None:
        if kind not in self._told:
            self._told.add(kind)
            self.monitor.report_error(in_lang(message, self.monitor.lang), kind=kind)

    def _guarded(self, state: Any, work: Callable[[], None]) -> None:
        try:
            work()
        except Exception as exc:  # noqa: BLE001 (the Trainer must go on whatever happens here)
            said = Words(f"TRL callback at step {state.global_step}: {type(exc).__name__}: {exc}",
                         f"TRL callback 在第 {state.global_step} 步出错：{type(exc).__name__}: {exc}")
            self.monitor.report_error(in_lang(said, self.monitor.lang), kind=f"callback {type(exc).__name__}")

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._guarded(state, lambda: self._read_pending(args, state, control, kwargs))

    def on_prediction_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        # an evaluation at the step of a training log overwrites the completion file when it logs: read it first
        self._guarded(state, lambda: self._read_pending(args, state, control, kwargs))

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._guarded(state, lambda: self._read_pending(args, state, control, kwargs))

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Ask the Trainer to stop (after saving a checkpoint, unless ``save_on_stop=False``) once the
        Monitor's verdict reached its ``stop_on``."""
        if self.stopped_at is not None or self.monitor.stop_on is None or not _any_rank(self.monitor.should_stop(),
                                                                                    args):
            return
        self.stopped_at = int(state.global_step)
        control.should_training_stop = True
        if self.save_on_stop:
            control.should_save = True
        if state.is_world_process_zero:
            at, saving, reason = self.stopped_at, self.save_on_stop, self.monitor.stop_reason()
            line = Words(f"rlvitals: stopping the training at step {at}"
                         + (", after saving a checkpoint" if saving else "") + f" ({reason})",
                         f"rlvitals：在第 {at} 步停止训练" + ("，停止前先保存 checkpoint" if saving else "")
                         + f"（{in_lang(reason, 'zh')}）")
            self.monitor.say(in_lang(line, self.monitor.lang))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._guarded(state, lambda: self._read_pending(args, state, control, kwargs))
        if self.prober is not None:  # the last probes reach the last diagnosis (probe_wait seconds at most)
            self.prober.close(self.probe_wait)
            self._guarded(state, self._say_probes)
        if self.own_monitor:
            self.monitor.close()
        else:
            self.monitor.flush()


def _any_rank(flag: bool, args: Any) -> bool:
    """``flag`` of any process of a distributed run: only rank 0's Monitor sees the logs, and every rank
    must stop at the same step (a rank left in a collective would wait for ever)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return flag
    import torch

    device = getattr(args, "device", None) if dist.get_backend() == "nccl" else "cpu"
    value = torch.tensor([1 if flag else 0], device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return bool(value.item())


def probe_plan(every: int | None, model: ProbeModel | None, options: ProbeOptions | None = None,
               rollouts: int = 8) -> PeriodicProbe | None:
    """How the callback probes (None without ``every``): every ``every`` steps, at most ``rollouts`` of the step's
    completions, asked of ``model`` — a local model folder or GGUF file (loaded in the probing thread, with the
    trainer's torch threads), a :class:`~rlvitals.probe.Backend` such as ``HttpBackend(url, name)``, or a function
    that makes one there. ProbeError says what is missing or wrong, before training starts.

    Example:
        >>> probe_plan(10, None)
        Traceback (most recent call last):
        ...
        rlvitals.errors.ProbeError: probe_every=10 needs probe_model: a local model folder or .gguf file, ...
    """
    from ..probe import LocalBackend, PeriodicProbe

    if every is None:
        if model is not None:
            raise ProbeError(Words("probe_model is the model that probes, but nothing is probed without probe_every=N",
                                   "probe_model 是做探测的模型，但没有 probe_every=N 就不会探测"))
        return None
    if model is None:
        raise ProbeError(Words(f"probe_every={every} needs probe_model: a local model folder or .gguf file, a backend "
                               "such as rlvitals.probe.HttpBackend(url, name), or a function that returns one",
                               f"probe_every={every} 需要 probe_model：本地模型文件夹或 .gguf 文件、一个后端（例如 "
                               "rlvitals.probe.HttpBackend(url, name)），或返回后端的函数"))
    if isinstance(model, (str, Path)):
        path = Path(model)
        LocalBackend.check(path)  # the packages and the files are there; the weights load in the probing thread
        make: Callable[[], Backend] = lambda: _local(path)  # noqa: E731
    elif callable(model):
        make = model
    else:
        backend = model
        make = lambda: backend  # noqa: E731
    return PeriodicProbe(every=every, backend=make, options=options or ProbeOptions(), max_rollouts=rollouts)


def _local(path: Path) -> Backend:
    """A local model as the probes' backend, with as many torch threads as the trainer has (not changed)."""
    import torch

    from ..probe import LocalBackend

    return LocalBackend(path, threads=torch.get_num_threads())


def attach(trainer: Any, monitor: Monitor | None = None, *, log_keys: Sequence[str] | Literal["all"] = DEFAULT_LOG_KEYS,
           **kwargs: Any) -> RlvitalsCallback:
    """A :class:`RlvitalsCallback` placed first among ``trainer``'s callbacks, writing ``log_keys`` to its
    loggers; ``kwargs`` go to the callback (``save_on_stop``) and the Monitor it makes (``sinks``,
    ``every``, ``state_path``, ``stop_on``...)."""
    return RlvitalsCallback(monitor, log_keys=log_keys, **kwargs).attach(trainer)
