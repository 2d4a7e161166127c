"""Exports: a diagnosed run's curves (logged and derived) and findings written where users already look.

Outputs layer: it reads Runs, Diagnoses and rollout series and nothing imports it back but the live
watcher. :func:`plan_export` chooses what to write (pure) and :func:`tally` counts what a writer wrote;
:func:`write_tensorboard` writes an event file with no dependency; :func:`write_wandb` logs through the
real ``wandb`` client, :func:`write_trackio` through ``trackio`` and :func:`write_swanlab` through
``swanlab``, each imported only when called; :class:`~rlvitals.export.live.LiveTensorBoard` appends to
an event file while ``watch`` runs.
"""


from __future__ import annotations

from .live import LiveTensorBoard, LiveWandb
from .plan import (
    STATUS_VALUE,
    TENSORBOARD_FOLDER,
    WANDB_FOLDER,
    ExportPlan,
    FindingRow,
    Series,
    Tally,
    expect_folder,
    plan_export,
    resolve_metrics,
    tally,
)
from .swanlab import SwanlabExport, write_swanlab
from .tensorboard import write_tensorboard
from .trackio import TrackioExport, write_trackio
from .wandb import WandbExport, write_wandb

__all__ = ["expect_folder", "ExportPlan", "FindingRow", "LiveTensorBoard", "LiveWandb", "plan_export",
    "resolve_metrics", "Series", "STATUS_VALUE", "Tally", "tally", "TENSORBOARD_FOLDER", "WANDB_FOLDER", "WandbExport",
    "SwanlabExport", "TrackioExport", "write_swanlab", "write_tensorboard", "write_trackio", "write_wandb"]
