"""The names the command line offers for the probes and the step verifiers, in a module of their own that
imports nothing: building the parser costs no probe machinery."""

from __future__ import annotations

__all__ = ["PROBES", "VERIFIERS"]

#: every intervention, in the order the output lists them
PROBES = ("early_answering", "add_mistake", "paraphrase", "filler", "biased")
#: the step verifiers ``rlvitals probe --verify`` offers
VERIFIERS = ("arithmetic", "word-problems")
