"""The Python API a notebook uses: diagnose a path or a Run, series by any alias, short reprs and HTML,
the Markdown report, a typed package whose dir() is its API."""

from __future__ import annotations

from pathlib import Path

import pytest

import rlvitals
from rlvitals.synthetic.simulate import write_example


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_example(tmp_path_factory.mktemp("ex"))["console"]


def test_diagnose_takes_a_path_or_a_run_and_a_config_path(example: Path, tmp_path: Path) -> None:
    by_path = rlvitals.diagnose(example)
    by_run = rlvitals.diagnose(rlvitals.load(example)[0])
    assert by_path.verdict == by_run.verdict == "fail" and len(by_path.findings) == len(by_run.findings)
    config = tmp_path / "checks.toml"
    config.write_text("[checks.entropy_collapse]\nenabled = false\n")
    quiet = rlvitals.diagnose(str(example), config)
    assert next(f for f in quiet.findings if f.check == "entropy_collapse").status == "skipped"


def test_diagnose_refuses_a_folder_of_several_runs_saying_how(example: Path, tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.log").write_bytes(example.read_bytes())
    with pytest.raises(rlvitals.RlvitalsError, match=r"holds 2 runs; diagnose each: \[rlvitals.diagnose\(r\)"):
        rlvitals.diagnose(tmp_path)


def test_series_takes_any_alias_and_names_what_the_run_logged(example: Path) -> None:
    run = rlvitals.load(example)[0]
    steps, values = run.series("actor/entropy")
    for alias in ("entropy", "policy/entropy_avg"):
        other = run.series(alias)
        assert (other[0] == steps).all() and (other[1] == values).all(), alias
    with pytest.raises(KeyError, match=r"'nope/metric': this run did not log it; it logged 48 metrics: actor/entropy"):
        run.series("nope/metric")


def test_reprs_are_one_line_and_notebooks_get_a_table(example: Path) -> None:
    d = rlvitals.diagnose(example)
    assert repr(d.run) == f"<Run {str(example)!r}: verl-console, verl GRPO, 300 steps (1–300), 48 metrics>"
    assert repr(d).startswith(f"<Diagnosis {str(example)!r}: fail — L5 fail, L1 fail,") and "\n" not in repr(d)
    page = d._repr_html_()
    assert "<table>" in page and "verdict <b>fail</b>" in page and "Entropy collapse" in page
    assert "<th style='text-align:left'>training steps</th><td>300 (1–300)</td>" in d.run._repr_html_()


def test_markdown_is_the_report_diagnose_markdown_prints(example: Path) -> None:
    import io

    from rlvitals.cli import main

    out = io.StringIO()
    main(["diagnose", str(example), "--markdown", "--lang", "zh"], out=out, err=io.StringIO())
    assert rlvitals.markdown(rlvitals.diagnose(example), "zh") == out.getvalue()


def test_the_package_is_typed_and_shows_only_its_api() -> None:
    assert (Path(rlvitals.__file__).parent / "py.typed").is_file()
    assert dir(rlvitals) == sorted(rlvitals.__all__)
    assert "run" not in dir(rlvitals) and "diagnose" in dir(rlvitals)


def test_markdown_is_what_diagnose_markdown_prints(example: Path) -> None:
    import io

    from rlvitals.cli import main

    d = rlvitals.diagnose(example)
    for lang, flags in (("en", []), ("zh", ["--lang", "zh"])):
        out = io.StringIO()
        main(["diagnose", str(example), "--markdown", *flags], out=out, err=io.StringIO())
        assert rlvitals.markdown(d, lang) == out.getvalue()
    assert rlvitals.markdown(d).startswith("# ") and "Entropy collapse" in rlvitals.markdown(d)


def _any_in(hint: object) -> bool:
    import typing

    return hint is typing.Any or any(_any_in(arg) for arg in typing.get_args(hint))


def _public_callables() -> dict[str, object]:
    """Every function of the top-level API, and every public method and field of its classes and of the
    results they return (Diagnosis, Finding, RolloutAnalysis)."""
    import inspect

    from rlvitals.diagnosis import Diagnosis, Finding
    from rlvitals.rollout.analysis import RolloutAnalysis

    found: dict[str, object] = {}
    tops = {name: getattr(rlvitals, name) for name in rlvitals.__all__ if name != "__version__"}
    for name, obj in {**tops, "Diagnosis": Diagnosis, "Finding": Finding, "RolloutAnalysis": RolloutAnalysis}.items():
        if not inspect.isclass(obj):
            found[name] = obj
            continue
        found[name] = obj  # a dataclass's fields are its class annotations
        for member, value in vars(obj).items():
            if member == "__init__" or not member.startswith("_"):
                fn = value.fget if isinstance(value, property) else value
                if inspect.isfunction(fn):
                    found[f"{name}.{member}"] = fn
    return found


def test_the_top_level_api_is_typed_without_any() -> None:
    import typing

    from rlvitals.checks.config import DiagnoseConfig
    from rlvitals.diagnosis import Diagnosis
    from rlvitals.rollout import RolloutAnalysis, RolloutSource
    from rlvitals.run import Run

    names = {"Diagnosis": Diagnosis, "DiagnoseConfig": DiagnoseConfig, "RolloutAnalysis": RolloutAnalysis,
             "RolloutSource": RolloutSource, "Run": Run}  # imported only for type checking where they are used
    found = _public_callables()
    assert {"analyze_rollouts", "diagnose", "Monitor.log_rollouts", "Run.series", "markdown"} <= set(found)
    loose = [f"{name}: {arg}" for name, obj in found.items()
             for arg, hint in typing.get_type_hints(obj, localns=names).items() if _any_in(hint)]
    assert loose == []
    assert _any_in(typing.Mapping[str, typing.Any]) and not _any_in(typing.Mapping[str, object])


def test_a_rollout_analysis_has_a_one_line_repr_and_a_table_for_notebooks() -> None:
    records = [{"step": step, "prompt": f"q{g}", "response": str(i), "score": float(i == g)}
               for step in (1, 2) for g in range(3) for i in range(4)]
    a = rlvitals.analyze_rollouts(records)
    assert repr(a) == (f"<RolloutAnalysis: 24 rollouts in 6 groups over 2 steps (records); "
                       f"pass@1 0.25; {len(a.skipped)} not computed>")
    page = a._repr_html_()
    assert "<th style='text-align:left'>pass@1</th><td>0.25</td>" in page
    assert "<th style='text-align:left'>rollouts</th><td>24</td>" in page
    assert "maj@1" not in page  # no answers were given: a metric without a value is not shown as nan
    assert f"<summary>{len(a.skipped)} not computed</summary>" in page and len(a.skipped) > 0
