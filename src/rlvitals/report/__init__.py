"""The HTML report: a page model built once from runs, diagnoses and rollouts (:mod:`.model`), rendered
to one self-contained file (:mod:`.html`). A later live dashboard can serve the same page model."""

from __future__ import annotations

from .html import render_html, write_report
from .model import build_page

__all__ = ["build_page", "render_html", "write_report"]
