"""The examples in the package's docstrings run and print what they say (STYLE: public functions
carry an example; an example nobody runs drifts). Examples marked ``# doctest: +SKIP`` need files or
models that a docstring cannot make; the rest run here, module by module."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import rlvitals

# __main__ runs the CLI when imported
MODULES = sorted(m.name for m in pkgutil.walk_packages(rlvitals.__path__, "rlvitals.") if m.name != "rlvitals.__main__")


#: modules whose examples run inside the optional parts (the fast inner loop leaves them out)
NEEDS = {"rlvitals.integrations.trl": pytest.mark.trl}


@pytest.mark.parametrize("name", [pytest.param(m, marks=NEEDS[m]) if m in NEEDS else m for m in MODULES])
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name, globs={**vars(module)}):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed (printed above)"
