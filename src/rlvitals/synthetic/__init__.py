"""Made-up data on purpose: simulated runs and pathologies, the scenario suite, the bundled example, the
real small model's sampler, its word problems and the live demo. Only the CLI (and tests) import it."""


from __future__ import annotations

from .demo import demo_files, watch_demo
from .sampler import DEFAULT_THREADS, check_sampling, load_policy, sample_steps
from .simulate import write_example
from .word_problems import known_states

__all__ = ["DEFAULT_THREADS", "check_sampling", "demo_files", "known_states", "load_policy", "sample_steps",
           "watch_demo", "write_example"]
