"""The layout shows the pipeline: every import of the package is walked with ``ast`` and held to the rules.

1. Only seven files stand at the top of ``src/rlvitals``; everything else lives in its stage's package.
2. A module imports only its own stage or an earlier one (``STAGES``); ``catalog`` only ``errors`` and ``words``;
   ``signals`` nothing of the package; only ``cli`` imports ``synthetic``; ``watch`` and ``server`` do
   not import each other.
3. An underscore module or name is used only inside its own package; what another package takes from a
   package (or a top-level module) is in its ``__all__``; no code reads another object's ``_attribute``;
   readers are imported plainly, never by name through ``importlib``.
4. One home per fact: the layer list and names live in ``catalog.toml``, the status order in ``checks``.
5. No module over 600 lines, no function over 60.
6. Tests mirror the tree: every folder of ``tests/`` holding tests is named after a package of the source.
7. No import circles: no module reaches itself through the imports that run (those under ``if TYPE_CHECKING:``
   do not; those inside functions do, when the function runs).

Each rule has an allowlist of the violations the tree still has; it may only shrink: a listed
violation that is gone fails the test too, so the list stays the truth.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "rlvitals"

TOP_FILES = {"__init__.py", "__main__.py", "_version.py", "errors.py", "_sqlite.py", "diagnosis.py",
             "words.py"}

#: the stage of each first-level name under rlvitals; a module imports only its stage or an earlier one
STAGES: dict[str, int] = {
    "errors": 0, "words": 0, "_version": 0, "_sqlite": 0,
    "catalog": 1,
    "ingest": 2,
    "run": 3,
    "rollout": 4,
    "signals": 5, "probe": 5, "forecast": 5,
    "checks": 6,
    "story": 7,
    "diagnosis": 8,
    "render": 9, "report": 9, "export": 9,
    "live": 10,
    "watch": 11, "server": 11,
    "synthetic": 12,
    "cli": 13, "integrations": 13,
}
#: the package's face and entry point import whatever they expose
FACES = {"rlvitals", "rlvitals.__main__"}

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60

# --- allowlists: today's violations; they may only shrink -------------------------------------------------

ALLOW_TOP: set[str] = set()
ALLOW_STAGE: set[tuple[str, str]] = set()
ALLOW_PRIVATE: set[tuple[str, str]] = set()
ALLOW_FACTS: set[tuple[str, str]] = set()
ALLOW_CIRCLES: set[tuple[str, ...]] = set()
ALLOW_LONG: set[str] = set()


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name
    target: str  # dotted module name imported from
    name: str | None  # the name imported from it (None for `import x` / a module)
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rsplit(".", 1)[0]


@functools.cache
def _parsed() -> tuple[tuple[str, Path, ast.Module], ...]:
    """Every module of the package, parsed once for every rule."""
    return tuple((_module_name(path), path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
                 for path in sorted(PKG.rglob("*.py")))


def modules() -> Iterator[tuple[str, Path, ast.Module]]:
    yield from _parsed()


def _is_module(dotted: str) -> bool:
    rel = Path(*dotted.split("."))
    return (SRC / rel).with_suffix(".py").is_file() or (SRC / rel / "__init__.py").is_file()


def imports() -> Iterator[Import]:
    for module, path, tree in modules():
        package = _package_of(module, path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith("rlvitals"):
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if _is_module(sub):  # `from . import x` imports the module x
                        yield Import(module, sub, None, node.lineno)
                    else:
                        yield Import(module, target, alias.name, node.lineno)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("rlvitals"):
                        yield Import(module, alias.name, None, node.lineno)


def _first(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else ""


def _owner(dotted: str) -> str:
    """The package a module belongs to: itself when it is a package, else its parent."""
    rel = Path(*dotted.split("."))
    return dotted if (SRC / rel / "__init__.py").is_file() else dotted.rsplit(".", 1)[0]


def _check(found: set, allowed: set, what: str) -> None:
    new, gone = sorted(found - allowed), sorted(allowed - found)
    message = []
    if new:
        message.append(f"{what}, not allowed:\n  " + "\n  ".join(map(str, new)))
    if gone:
        message.append("fixed, so take them off the allowlist:\n  " + "\n  ".join(map(str, gone)))
    assert not message, "\n".join(message)


def test_rule1_only_seven_files_at_the_top() -> None:
    loose = {p.name for p in PKG.iterdir() if p.is_file() and p.suffix in {".py", ".toml"}} - TOP_FILES
    _check(loose, ALLOW_TOP, "files at the top of src/rlvitals")
    unstaged = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").is_file()} - set(STAGES)
    assert not unstaged, f"packages without a stage in STAGES: {sorted(unstaged)}"


def _stage(dotted: str) -> int | None:
    first = _first(dotted)
    return STAGES.get(first)


def _stage_violation(imp: Import) -> bool:
    if imp.importer in FACES:
        return False
    src, dst = _first(imp.importer), _first(imp.target)
    if src == dst or imp.target == "rlvitals":
        return imp.target == "rlvitals" and imp.importer not in FACES
    if src == "catalog" and dst not in ("errors", "words"):
        return True
    if src == "signals":
        return True
    if dst == "synthetic" and src != "cli":
        return True
    if {src, dst} == {"watch", "server"}:
        return True
    a, b = _stage(imp.importer), _stage(imp.target)
    return a is None or b is None or b > a


def test_rule2_imports_point_down_the_pipeline() -> None:
    found = {(i.importer, i.target) for i in imports() if _stage_violation(i)}
    _check(found, ALLOW_STAGE, "imports against the pipeline (importer, imported)")


def _private_use(imp: Import) -> bool:
    """An underscore module belongs to the package holding it; an underscore name to its module's package."""
    parts = imp.target.split(".")
    private = [i for i, p in enumerate(parts) if i and p.startswith("_") and not p.startswith("__")]
    if private:
        holder = ".".join(parts[: private[0]])
    elif imp.name is not None and imp.name.startswith("_") and not imp.name.startswith("__"):
        holder = _owner(imp.target)
    else:
        return False
    return not (imp.importer == holder or imp.importer.startswith(holder + "."))


#: the standard library's public functions whose names begin with an underscore (documented API, not internals)
DOCUMENTED_UNDERSCORE = {("os", "_exit")}


def _foreign_attributes() -> Iterator[tuple[str, str]]:
    """``x._name`` where x is not ``self``/``cls`` (the object's own state) — reading another's internals."""
    for module, _path, tree in modules():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and not (isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"})
                    and not (isinstance(node.value, ast.Name)
                             and (node.value.id, node.attr) in DOCUMENTED_UNDERSCORE)):
                yield module, node.attr


def _importlib_readers() -> Iterator[tuple[str, str]]:
    for module, _path, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "import_module":
                yield module, "importlib.import_module"


def _public_names(first: str) -> set[str]:
    """The ``__all__`` of ``rlvitals.<first>`` (a package's face or a top-level module), read with ast."""
    path = PKG / first / "__init__.py" if (PKG / first).is_dir() else PKG / f"{first}.py"
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return {e.value for e in node.value.elts if isinstance(e, ast.Constant)}  # type: ignore[attr-defined]
    return set()


def _unlisted(found: Iterable[Import] | None = None) -> Iterator[tuple[str, str]]:
    """Names one package takes from another that the other's ``__all__`` does not list."""
    for imp in imports() if found is None else found:
        src, dst = _first(imp.importer), _first(imp.target)
        if imp.importer in FACES or not dst or src == dst or imp.name is None:
            continue
        if imp.name not in _public_names(dst):
            yield imp.importer, f"{imp.target}:{imp.name} (not in rlvitals.{dst}.__all__)"


def test_rule3_private_stays_private() -> None:
    found: set[tuple[str, str]] = {(i.importer, f"{i.target}:{i.name}" if i.name else i.target)
                                   for i in imports() if _private_use(i)}
    found |= {(m, f"._{a.lstrip('_')}") for m, a in _foreign_attributes()}
    found |= set(_importlib_readers())
    found |= set(_unlisted())
    _check(found, ALLOW_PRIVATE, "private modules, names or attributes used from outside")


def _layer_literals() -> Iterator[tuple[str, str]]:
    """Literal layer lists or name tables in Python (the layer facts belong in catalog.toml), and status
    orders or rank tables outside ``checks`` (the order belongs to checks)."""
    layers = {"L1", "L2", "L3", "L4", "L5", "L6"}
    statuses = {"ok", "note", "warn", "fail"}
    for module, _path, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                values = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if len(values & layers) >= 3:
                    yield module, "layer list"
                if len(values & statuses) >= 3 and _first(module) != "checks":
                    yield module, "status order"
            elif isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
                if len(keys & layers) >= 3:
                    yield module, "layer table"
                ranks = all(isinstance(v, ast.Constant) and isinstance(v.value, int) for v in node.values)
                if len(keys & statuses) >= 3 and ranks and _first(module) != "checks":
                    yield module, "status order"  # a rank table; marks and colours per status are a renderer's own


def test_rule4_one_home_per_fact() -> None:
    _check(set(_layer_literals()), ALLOW_FACTS, "facts written outside their home (module, fact)")


def _too_long() -> Iterator[str]:
    for module, path, tree in modules():
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MAX_MODULE_LINES:
            yield f"{module} ({lines} lines)"
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    yield f"{module}.{node.name}"


def _type_only(tree: ast.Module) -> set[int]:
    """The lines of a module's ``if TYPE_CHECKING:`` blocks: imports there never run."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING":
            for stmt in node.body:  # type: ignore[union-attr]
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def runtime_imports() -> Iterator[Import]:
    """The imports that run: every import but those under ``if TYPE_CHECKING:``."""
    skipped = {module: _type_only(tree) for module, _path, tree in modules()}
    for imp in imports():
        if imp.line not in skipped.get(imp.importer, ()):
            yield imp


def circles(found: Iterable[Import]) -> list[tuple[str, ...]]:
    """The import circles of ``found``: each group of modules that reach one another (a strongly connected
    component of two or more), sorted, found by Tarjan's algorithm."""
    graph: dict[str, set[str]] = {}
    for imp in found:
        if imp.importer != imp.target:
            graph.setdefault(imp.importer, set()).add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[tuple[str, ...]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(tuple(sorted(group)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_rule7_no_import_circles() -> None:
    _check(set(circles(runtime_imports())), ALLOW_CIRCLES, "import circles")


def test_the_circle_rule_itself() -> None:
    fed = [Import("rlvitals.cli._common", "rlvitals.cli._parser", "X", 1),
           Import("rlvitals.cli._parser", "rlvitals.cli.probe", "Y", 2),
           Import("rlvitals.cli.probe", "rlvitals.cli._common", "Z", 3),  # back to the first: a circle of three
           Import("rlvitals.cli.probe", "rlvitals.errors", None, 4),
           Import("rlvitals.run.run", "rlvitals.run.run", None, 5)]  # itself: no circle
    assert circles(fed) == [("rlvitals.cli._common", "rlvitals.cli._parser", "rlvitals.cli.probe")]
    assert circles(fed[:2]) == []
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .x import Y\nfrom .z import W\n")
    assert _type_only(tree) == {3}


def test_rule5_short_modules_and_functions() -> None:
    _check(set(_too_long()), ALLOW_LONG, "modules over 600 lines or functions over 60")


def test_rule6_tests_mirror_the_tree() -> None:
    tests = Path(__file__).resolve().parent
    packages = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    folders = {p.name for p in tests.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert folders <= packages, f"test folders named after no package: {sorted(folders - packages)}"
    loose = {p.stem.removeprefix("test_") for p in tests.glob("test_*.py")}
    assert not loose & packages, f"tests of a package at the top of tests/: {sorted(loose & packages)}"


@pytest.mark.parametrize("module", ["rlvitals.ingest.x", "rlvitals.ingest.sub.x"])
def test_private_module_is_private_to_its_package(module: str) -> None:
    """The rule itself: a package's own modules may use its private module; another package may not."""
    assert not _private_use(Import(module, "rlvitals.ingest._crash", None, 1))
    assert _private_use(Import("rlvitals.run.run", "rlvitals.ingest._crash", None, 1))
    assert _private_use(Import("rlvitals.run.run", "rlvitals.catalog.aliases", "_NEG", 1))
    assert not _private_use(Import("rlvitals.catalog.lookup", "rlvitals.catalog.aliases", "_NEG", 1))
    assert not _private_use(Import("rlvitals.watch.state", "rlvitals._sqlite", "connect_wal", 1))


def test_the_all_rule_itself() -> None:
    taken = Import("rlvitals.run.run", "rlvitals.ingest.text", "iter_lines", 1)
    assert list(_unlisted([taken])) == [("rlvitals.run.run", "rlvitals.ingest.text:iter_lines (not in "
                                                              "rlvitals.ingest.__all__)")]
    assert not list(_unlisted([Import("rlvitals.run.run", "rlvitals.ingest.record", "Record", 1)]))
    assert not list(_unlisted([Import("rlvitals.ingest.formats.csv_table", "rlvitals.ingest.text", "iter_lines", 1)]))


def test_stage_rule_itself() -> None:
    assert _stage_violation(Import("rlvitals.ingest.formats.csv_table", "rlvitals.run.run", "Run", 1))
    assert not _stage_violation(Import("rlvitals.run.run", "rlvitals.ingest.record", "Record", 1))
    assert _stage_violation(Import("rlvitals.catalog.catalog", "rlvitals.ingest.record", "Record", 1))
    assert _stage_violation(Import("rlvitals.signals", "rlvitals.errors", None, 1))
    assert _stage_violation(Import("rlvitals.watch.x", "rlvitals.server.y", None, 1))
    assert _stage_violation(Import("rlvitals.report.x", "rlvitals.synthetic.y", None, 1))
    assert not _stage_violation(Import("rlvitals.cli.x", "rlvitals.synthetic.y", None, 1))
