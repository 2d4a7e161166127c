"""``rlvitals serve``: the live dashboard (FastAPI) over the runs of served folders and files.

Importing this package loads FastAPI; ``rlvitals`` itself never imports it (the CLI does, lazily).
"""

from __future__ import annotations

from .app import create_app
from .runner import ServerThread, default_state_path, serve
from .store import ServeState
from .workspace import Served, Workspace, WorkspaceOptions, run_id

__all__ = ["ServeState", "Served", "ServerThread", "Workspace", "WorkspaceOptions", "create_app",
           "default_state_path", "run_id", "serve"]
