"""The HTML report: a page model built once from runs, diagnoses and rollouts (:mod:`.model`), rendered
to one self-contained file (:mod:`.html`); the live dashboard serves the same page model and templates."""


from __future__ import annotations

from .charts import trace
from .html import STATUS, UI, jinja_env, page_script, plotly_bundle, render_html, theme_script, write_report
from .model import build_page, unique_labels
from .rollouts import group_count, step_groups

__all__ = ["build_page", "group_count", "jinja_env", "page_script", "plotly_bundle", "render_html", "STATUS",
           "step_groups", "theme_script", "trace", "UI", "unique_labels", "write_report"]
