"""rlvitals: is this RL post-training run healthy, and if not, what is wrong since when?

In a notebook::

    import rlvitals
    d = rlvitals.diagnose("train.log")      # a path or a Run; shows the verdict per layer
    d.run.series("entropy")                  # (steps, values) of any metric, by any alias
    print(rlvitals.markdown(d))              # the Markdown report (rlvitals.markdown(d, "zh") in Chinese)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .errors import RlvitalsError
from .words import Words

if TYPE_CHECKING:
    from .catalog import load_catalog as load_catalog
    from .checks.config import DiagnoseConfig
    from .diagnosis import Diagnosis

    # imported on first use (``__getattr__``), so ``import rlvitals`` stays light for readers of logs only
    from .rollout.analysis import analyze_rollouts as analyze_rollouts
    from .run import Run as Run
    from .run import load as load
    from .watch.monitor import Monitor as Monitor

__all__ = ["Monitor", "Run", "RlvitalsError", "__version__", "analyze_rollouts", "diagnose", "load", "load_catalog",
           "markdown"]


def diagnose(run: Run | str | os.PathLike[str], config: DiagnoseConfig | str | os.PathLike[str] | None = None
             ) -> Diagnosis:
    """Every check on ``run``: a Run, or the path of a log or run folder holding one run (for a folder
    of several, diagnose each of :func:`load`'s). ``config``: a :class:`~rlvitals.checks.config.
    DiagnoseConfig` or the path of its TOML file (what ``--config`` reads)."""
    from .checks.config import DiagnoseConfig, load_config
    from .diagnosis import diagnose as run_checks
    from .run import Run, load

    if not isinstance(run, Run):
        runs = load(os.fspath(run))
        if len(runs) != 1:
            each = f"[rlvitals.diagnose(r) for r in rlvitals.load({str(run)!r})]"
            raise RlvitalsError(Words(f"{run}: holds {len(runs)} runs; diagnose each: {each}",
                                      f"{run}：其中有 {len(runs)} 个运行；请逐个诊断：{each}"))
        run = runs[0]
    if config is not None and not isinstance(config, DiagnoseConfig):
        config = load_config(os.fspath(config))
    return run_checks(run, config)


def markdown(diagnosis: Diagnosis, lang: str = "en", show_all: bool = False) -> str:
    """The Markdown report of a diagnosis (what ``rlvitals diagnose --markdown`` prints), in English or Chinese
    (``lang="zh"``): a text to paste into an issue or send a colleague. Passed and skipped checks are one line
    each; ``show_all=True`` lists them with their words (``--markdown --all``)."""
    from .render.diagnosis import render_markdown

    return render_markdown(diagnosis, lang, show_all)


def __getattr__(name: str) -> Any:
    # the Run and load (polars), the catalog (its TOML), the in-process Monitor (a worker thread, the alert
    # sinks) and the rollout analytics load when asked for: the command line forks a log's second reader
    # before numpy, polars and the catalog are imported
    if name in ("Run", "load"):
        from . import run

        return getattr(run, name)
    if name == "load_catalog":
        from .catalog import load_catalog

        return load_catalog
    if name == "Monitor":
        from .watch.monitor import Monitor

        return Monitor
    if name == "analyze_rollouts":
        from .rollout.analysis import analyze_rollouts

        return analyze_rollouts
    raise AttributeError(f"module 'rlvitals' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The API, not the modules a first use has imported."""
    return sorted(__all__)
