"""The lazy faces (rlvitals.run, rlvitals.rollout, rlvitals.probe): every name of their ``__all__`` resolves to
the object its home module holds, after the home module was imported by anyone; no lazy name is also the
name of a submodule (importing that submodule would put the module on the package under that name)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest

FACES = ("rlvitals.run", "rlvitals.rollout", "rlvitals.probe")


@pytest.mark.parametrize("face", FACES)
def test_every_name_of_a_lazy_face_is_its_home_modules(face: str) -> None:
    package = importlib.import_module(face)
    submodules = {m.name for m in pkgutil.iter_modules(package.__path__)}
    assert not set(package.HOMES) & submodules
    for home in set(package.HOMES.values()):
        importlib.import_module(f"{face}.{home}")  # imported by someone: the package gains the attribute
    for name in package.__all__:
        got = getattr(package, name)
        home = package.HOMES.get(name)
        if home is not None:
            assert got is getattr(importlib.import_module(f"{face}.{home}"), name), name
        assert not isinstance(got, type(sys)), f"{face}.{name} is a module"


def test_the_command_line_reads_a_log_before_importing_polars() -> None:
    """Up to the read of a log (where a large one is shared with a forked worker), nothing imports polars."""
    code = ("import sys\n"
            "from rlvitals.cli._common import rollout_settings\n"
            "from rlvitals.cli._parser import build_parser\n"
            "import rlvitals.run.load, rlvitals.ingest\n"
            "args = build_parser().parse_args(['diagnose', 'x.jsonl'])\n"
            "rollout_settings(args, args.rollouts)\n"
            "print('polars' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False", done.stderr
