"""Terminal and Markdown renderings: pure functions from results to text."""


from __future__ import annotations

from .brief import brief_markdown, key_number, render_brief, render_runs_table, runs_markdown
from .console import WIDTH
from .diagnosis import (
    STATUS_STYLE,
    STATUS_WORDS,
    count_words,
    layer_code,
    render_diagnosis,
    render_markdown,
    when_words,
)
from .explain import render_explain, render_list
from .forecast import render_forecast
from .formats import FORMATS_ZH, render_formats
from .inspection import render_inspect, render_shared_notes
from .json_text import json_dumps, shown
from .not_computed import fold_not_computed, render_not_computed
from .probe import render_probe
from .rm_compare import render_rm_compare
from .rollout_log import render_rollout_log
from .rollouts import render_rollouts
from .said import ENGLISH_ORIGINAL
from .story import STORY_WORDS, because_words, healthy_words
from .summary import fold_notes, rollout_log, rollout_summary, run_summary

__all__ = ["render_diagnosis", "render_explain", "render_inspect", "render_list", "render_markdown",
    "fold_not_computed", "render_not_computed", "FORMATS_ZH", "render_forecast", "render_formats", "render_probe",
    "render_rollout_log", "render_rollouts", "rollout_log", "rollout_summary", "run_summary", "STATUS_STYLE",
    "STATUS_WORDS", "layer_code", "when_words", "WIDTH", "ENGLISH_ORIGINAL", "STORY_WORDS", "because_words",
    "healthy_words", "count_words", "json_dumps", "shown", "render_rm_compare", "brief_markdown", "key_number",
    "render_brief", "render_runs_table", "runs_markdown", "render_shared_notes", "fold_notes"]
