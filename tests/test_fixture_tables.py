"""The six notebook-table CSVs in tests/fixtures/real/ are what tests/fixtures/extract_tables.py rebuilds from
the notebooks in tests/fixtures/notebooks/, byte for byte; and every fixture's sidecar states its sha256 and size."""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REAL, REF

FIXTURES = REAL.parent


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("extract_tables", FIXTURES / "extract_tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXTRACT = _script()


def test_every_notebook_table_is_listed() -> None:
    tables = {p.name for p in REAL.glob("trl-unsloth__notebooks__*.training_table.csv")}
    assert tables == set(EXTRACT.TABLES) and len(tables) == 6
    notebooks = {p.name for p in (FIXTURES / "notebooks").glob("*.ipynb")}
    assert notebooks == {notebook for notebook, _ in EXTRACT.TABLES.values()}


@pytest.mark.parametrize("name", sorted(EXTRACT.TABLES))
def test_the_table_is_rebuilt_byte_for_byte(name: str) -> None:
    assert EXTRACT.rebuild(name) == (REAL / name).read_bytes()


def test_the_script_checks_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert EXTRACT.main([]) == 0
    assert capsys.readouterr().out.count("same: ") == 6


def _sidecar(path: Path) -> dict[str, str]:
    text = Path(f"{path}.source.txt").read_text(encoding="utf-8")
    return dict(re.findall(r"^([a-z0-9_]+): (.*)$", text, flags=re.MULTILINE))


@pytest.mark.parametrize("path", sorted([*REAL.glob("*.log"), *REAL.glob("*.csv"), *REAL.glob("*.json"),
                                         *(REF / "lighteval").glob("*.json"),
                                         *(FIXTURES / "notebooks").glob("*.ipynb")]), ids=lambda p: p.name)
def test_the_sidecar_names_the_bytes(path: Path) -> None:
    side, data = _sidecar(path), path.read_bytes()
    assert side["sha256"] == hashlib.sha256(data).hexdigest()
    assert int(side["bytes"]) == len(data)
    assert side["licence"] and ("commit" in side or "notebook_commit" in side)
