"""L6 faithfulness probes: does a correct answer come from its chain of thought, or despite it?

The face of the stage: :func:`run_probe` reads rollouts (:mod:`.source`), asks a model about interventions on
their reasoning (:mod:`.interventions`, :mod:`.runner`, through :mod:`.backends` or :mod:`.local`), verifies
their intermediate steps (:mod:`.steps`) and sums it all up (:mod:`.summary`), overall and per training step.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backends import Backend, Cache, Cached, HttpBackend
    from .chain import Chain, chain_of
    from .interventions import FRACTIONS
    from .local import LocalBackend
    from .names import PROBES, VERIFIERS
    from .periodic import PeriodicProbe, ProbeWorker, due, merge_steps, probe_into
    from .prompts import FORCE, Request
    from .result import run_probe, write_steps
    from .rm_compare import compare_columns, compare_scored
    from .rm_scorer import LocalScorer, PoolingScorer
    from .runner import ProbeOptions, Progress
    from .stats import wilson
    from .steps import Arithmetic, Combined, KnownStates, States, StepCheck, Verifier, verifier_for

__all__ = ["FORCE", "FRACTIONS", "PROBES", "Arithmetic", "Backend", "Cache", "Cached", "Chain", "Combined",
           "HttpBackend", "PoolingScorer", "Request", "KnownStates", "LocalBackend", "LocalScorer", "PeriodicProbe",
           "ProbeOptions", "ProbeWorker", "Progress", "States",
           "StepCheck", "Verifier", "chain_of", "VERIFIERS", "compare_columns", "compare_scored", "due", "merge_steps",
           "probe_into", "run_probe",
           "verifier_for", "wilson", "write_steps"]

#: where each name of the face lives; a module is imported when one of its names is first asked for, so the
#: command line's options (``PROBES``, ``VERIFIERS``) cost no model backend, HTTP client or rollout reader
HOMES = {**dict.fromkeys(("Backend", "Cache", "Cached", "HttpBackend"), "backends"),
         **dict.fromkeys(("Chain", "chain_of"), "chain"), "FRACTIONS": "interventions",
         "LocalBackend": "local", **dict.fromkeys(("FORCE", "Request"), "prompts"),
         **dict.fromkeys(("PeriodicProbe", "ProbeWorker", "due", "merge_steps", "probe_into"), "periodic"),
         **dict.fromkeys(("run_probe", "write_steps"), "result"),
         **dict.fromkeys(("compare_columns", "compare_scored"), "rm_compare"),
         **dict.fromkeys(("LocalScorer", "PoolingScorer"), "rm_scorer"),
         **dict.fromkeys(("ProbeOptions", "Progress"), "runner"),
         **dict.fromkeys(("Arithmetic", "Combined", "KnownStates", "States", "StepCheck", "Verifier", "verifier_for"),
                         "steps"), **dict.fromkeys(("PROBES", "VERIFIERS"), "names"), "wilson": "stats"}


def __getattr__(name: str) -> Any:
    home = HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # looked up each time, never kept here: a test that patches the module's name patches the face's too
    return getattr(import_module(f".{home}", __name__), name)
