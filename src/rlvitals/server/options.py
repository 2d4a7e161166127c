"""How a dashboard's runs are read and followed: the options of :class:`~rlvitals.server.workspace.Workspace`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..checks.config import DiagnoseConfig
from ..ingest.rotated import RotationRules
from ..live import Confirm, Cooldown
from ..rollout.options import RolloutSettings


@dataclass(frozen=True)
class WorkspaceOptions:
    """How runs are read and followed. ``rescan``: seconds between looks for new logs in a folder."""

    fmt: str | None = None
    config: DiagnoseConfig | None = None
    #: rollout dump folders: one per served path in their order (None for a path without), or one
    #: folder when one path is served
    rollouts: Path | tuple[Path | None, ...] | None = None
    #: how those rollouts are read and analysed (``--k``, ``--tool-cap``, the column options …)
    rollout_settings: RolloutSettings = field(default_factory=RolloutSettings)
    interval: float = 0.5
    rescan: float = 5.0
    min_gap: float = 2.0
    settle: float = 10.0
    #: where the text logs' rotated files go that no rotation tool's default names (``--rotated-into``,
    #: ``--rotation-pattern``)
    rotation: RotationRules = field(default_factory=RotationRules)
    #: the rules of the run pages' own alerts (:mod:`.live_alerts`): ``rlvitals watch``'s defaults
    confirm: Confirm = field(default_factory=Confirm)
    cooldown: Cooldown = field(default_factory=Cooldown)
    #: the algorithm id the served runs are (``--algorithm``): their keys are read as its; None: detected
    algorithm: str | None = None
    #: processes that read quiet logs whole (:mod:`.quiet`); 0: the poll thread reads them itself
    workers: int = 0

    def __post_init__(self) -> None:
        if self.algorithm is not None:  # a name the catalog does not know fails here, not at the first read
            from ..catalog import load_catalog
            from ..run.detect import checked_algorithm

            checked_algorithm(self.algorithm, load_catalog(), "WorkspaceOptions: algorithm=")
