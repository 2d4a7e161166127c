"""Tests say what they cost: a test that starts another process (directly, through a helper of its module, or
through a fixture of its module) carries the ``process`` marker, so the fast inner loop can leave it out."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: the calls that start a process
STARTS = {("subprocess", name) for name in ("run", "Popen", "check_output", "check_call", "call")}


def _starts_a_process(fn: ast.AST, functions: dict[str, ast.FunctionDef], seen: frozenset[str]) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and (node.value.id, node.attr) in STARTS:
            return True
        if isinstance(node, ast.Name) and node.id == "Popen":
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions \
                and node.func.id not in seen \
                and _starts_a_process(functions[node.func.id], functions, seen | {node.func.id}):
            return True
    return False


def _marked(fn: ast.FunctionDef, module: ast.Module, mark: str) -> bool:
    said = [ast.unparse(d) for d in fn.decorator_list]
    said += [ast.unparse(node.value) for node in module.body if isinstance(node, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)]
    return any(f"pytest.mark.{mark}" in text for text in said)


def unmarked(source: str) -> list[str]:
    """The tests of a module's ``source`` that start a process without the ``process`` marker."""
    module = ast.parse(source)
    functions = {n.name: n for n in module.body if isinstance(n, ast.FunctionDef)}
    fixtures = {name for name, fn in functions.items() if any("fixture" in ast.unparse(d) for d in fn.decorator_list)}
    found = []
    for name, fn in functions.items():
        if not name.startswith("test"):
            continue
        used = [functions[a.arg] for a in fn.args.args if a.arg in fixtures]
        if any(_starts_a_process(f, functions, frozenset({f.name})) for f in (fn, *used)) \
                and not _marked(fn, module, "process"):
            found.append(name)
    return found


def test_every_test_that_starts_a_process_says_so() -> None:
    missing = {str(path.relative_to(TESTS)): names for path in sorted(TESTS.rglob("test_*.py"))
               if (names := unmarked(path.read_text(encoding="utf-8")))}
    assert missing == {}


def test_the_rule_sees_a_process_started_directly_through_a_helper_or_a_fixture() -> None:
    source = '''
import subprocess
import pytest

def _cli(*args):
    return subprocess.run(["rlvitals", *args])

@pytest.fixture
def server():
    yield subprocess.Popen(["rlvitals", "serve"])

def test_direct():
    subprocess.run(["true"])

def test_helper():
    _cli("inspect")

def test_fixture(server):
    pass

@pytest.mark.process
def test_marked():
    _cli("inspect")

def test_plain():
    assert 1 + 1 == 2
'''
    assert unmarked(source) == ["test_direct", "test_helper", "test_fixture"]
    assert unmarked("import pytest\npytestmark = [pytest.mark.process]\n" + source.split("import pytest", 1)[1]) == []
