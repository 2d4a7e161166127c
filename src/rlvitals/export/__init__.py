"""Exports: a diagnosed run's derived series and findings written where users already look.

Outputs layer: it reads Runs, Diagnoses and rollout series and nothing imports it back.
:func:`plan_export` chooses what to write (pure); :func:`write_tensorboard` writes an event
file with no dependency; :func:`write_wandb` logs through the real ``wandb`` client, imported
only when called; :class:`~rlvitals.export.live.LiveTensorBoard` appends to an event file while
``watch`` runs.
"""

from __future__ import annotations

from .plan import STATUS_VALUE, ExportPlan, FindingRow, Series, plan_export, resolve_metrics
from .tensorboard import write_tensorboard
from .wandb import WandbExport, write_wandb

__all__ = ["STATUS_VALUE", "ExportPlan", "FindingRow", "Series", "WandbExport", "plan_export", "resolve_metrics",
           "write_tensorboard", "write_wandb"]
