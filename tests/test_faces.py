"""The lazy faces (rlvitals.run, rlvitals.rollout, rlvitals.probe): every name of their ``__all__`` resolves to
the object its home module holds, after the home module was imported by anyone; no lazy name is also the
name of a submodule (importing that submodule would put the module on the package under that name)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlvitals.synthetic.simulate import Scenario, jsonl_lines

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


@pytest.mark.process
def test_the_command_line_reads_a_log_before_importing_polars_numpy_or_the_catalog() -> None:
    """Up to the read of a log (where a large one is shared with a forked worker), nothing imports polars,
    numpy or the catalog (together about 0.2 s the worker would wait)."""
    code = ("import sys\n"
            "from rlvitals.cli._common import rollout_settings\n"
            "from rlvitals.cli._parser import build_parser\n"
            "import rlvitals.run.load, rlvitals.ingest\n"
            "args = build_parser().parse_args(['diagnose', 'x.jsonl'])\n"
            "rollout_settings(args, args.rollouts)\n"
            "print(sorted({'polars', 'numpy', 'rlvitals.catalog', 'rlvitals.run.builder'} & set(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stderr


@pytest.mark.process
def test_diagnose_forks_the_worker_of_a_large_log_before_polars_is_imported(tmp_path: Path) -> None:
    """The command as a user runs it, on a log large enough to be shared (16 MB): the forked worker finds no
    polars or numpy in its process (it was forked before their import), and the parent imported them meanwhile."""
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"\n".join(jsonl_lines(Scenario(steps=10_000))) + b"\n")
    seen = tmp_path / "seen.txt"
    code = ("import sys, io, os\n"
            "from rlvitals.ingest import pieces\n"
            "real = pieces._worker\n"
            "def worker(*a):\n"
            "    loaded = ' '.join(str(name in sys.modules) for name in ('polars', 'numpy'))\n"
            f"    open({str(seen)!r}, 'a').write(f'worker {{loaded}}\\n')\n"
            "    real(*a)\n"
            "pieces._worker = worker\n"
            "from rlvitals.cli import main\n"
            f"code = main(['diagnose', {str(log)!r}, '--json'], out=io.StringIO(), err=io.StringIO())\n"
            f"open({str(seen)!r}, 'a').write(f'parent {{\"polars\" in sys.modules}} {{code}}\\n')\n")
    subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert seen.read_text().splitlines() == ["worker False False", "parent True 0"]


@pytest.mark.process
def test_a_diagnosis_written_as_json_does_not_import_the_terminal_renderers(tmp_path: Path) -> None:
    """rich (0.05 s of imports) is for the terminal and Markdown; ``--json`` writes without it, and a
    diagnosis shown on the terminal still imports it (the check can see it)."""
    log = tmp_path / "run.jsonl"
    log.write_bytes(b"\n".join(jsonl_lines(Scenario(steps=50))) + b"\n")
    code = ("import sys, io\n"
            "from rlvitals.cli import main\n"
            f"main(['diagnose', {str(log)!r}] + sys.argv[1:], out=io.StringIO(), err=io.StringIO())\n"
            "print('rich' in sys.modules, 'numpy.ma' in sys.modules)\n")
    seen = [subprocess.run([sys.executable, "-c", code, *flags], capture_output=True, text=True, timeout=120,
                           check=True).stdout.split() for flags in (["--json"], [], ["--markdown", "--json"])]
    assert seen == [["False", "True"], ["True", "True"], ["True", "True"]]
