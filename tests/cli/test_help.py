"""CLI habits: --version, help with every option explained and its default, examples that parse,
formats described, near misses suggested, completion scripts that complete in a real shell."""

from __future__ import annotations

import io
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from rlvitals import __version__
from rlvitals.cli import main
from rlvitals.cli._parser import EXAMPLES, Parser, build_parser
from rlvitals.ingest import readers


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _subcommands() -> dict[str, Parser]:
    return {name: parser for name, (_, parser) in build_parser().commands.items()}


def test_version_prints_the_package_version() -> None:
    assert _cli("--version") == (0, f"rlvitals {__version__}\n", "")


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_every_option_says_what_it_does_and_the_help_shows_examples(name: str) -> None:
    parser = _subcommands()[name]
    silent = [a.dest for a in parser.options if not a.help]
    assert not silent, f"{name}: options without help: {silent}"
    code, out, _ = _cli(name, "--help")
    assert code == 0 and out.startswith("usage: rlvitals " + name) and "\nexamples:\n" in out
    for line in EXAMPLES[name]:
        assert f"  {line}\n" in out


@pytest.mark.parametrize("line", [line for lines in EXAMPLES.values() for line in lines])
def test_every_example_in_the_help_parses(line: str) -> None:
    words = shlex.split(line.split(" > ")[0])
    assert words[0] == "rlvitals"
    args = build_parser().parse_args(words[1:])
    assert args.command == words[1]


def test_help_shows_defaults_unless_the_text_says_them() -> None:
    _, out, _ = _cli("watch", "--help")
    flat = " ".join(out.split())
    assert "seconds between polls (default: 0.5)" in flat and "(default: 600.0)" in flat
    _, out, _ = _cli("sample", "--help")
    assert "(default 2)" in out and "(default 2) (default" not in out  # said once, in its own words


def test_formats_lists_each_format_once_with_what_it_reads() -> None:
    code, out, _ = _cli("formats")
    lines = out.splitlines()
    formats = list(dict.fromkeys(r.format for r in readers()))
    assert code == 0 and [line.split()[0] for line in lines[:len(formats)]] == formats
    assert all(r.describes for r in readers()), [r.format for r in readers() if not r.describes]
    assert "veRL's console logger: step:N - key:value lines" in out and lines[-1].startswith("rlvitals finds")


@pytest.mark.parametrize("typed, suggested", [
    ("actor/entrpy", "'actor/entropy'"), ("pg_clip_frac", "'actor/pg_clipfrac'"), ("kl_los", "'actor/kl_loss'"),
    ("response_lenght/mean", "'response_length/mean'"),
])
def test_explain_suggests_the_nearest_names(typed: str, suggested: str) -> None:
    code, out, err = _cli("explain", typed)
    assert (code, out) == (2, "")
    assert f"Did you mean {suggested}" in err and err.rstrip().endswith("to see every metric.")


def test_explain_suggests_nothing_for_a_name_like_none() -> None:
    _, _, err = _cli("explain", "xyzzy")
    assert "Did you mean" not in err


def _bash_complete(script: Path, words: list[str], cwd: Path) -> list[str]:
    """What bash offers for the last of ``words``, with the script sourced (a real bash)."""
    line = " ".join(shlex.quote(w) for w in words)
    program = (f"source {shlex.quote(str(script))}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; "
               "_rlvitals; printf '%s\\n' \"${COMPREPLY[@]}\"")
    done = subprocess.run(["bash", "-c", program], cwd=cwd, capture_output=True, text=True, check=True)
    return sorted(x for x in done.stdout.splitlines() if x)


@pytest.mark.process
def test_the_bash_script_completes_commands_options_choices_keys_and_files(tmp_path: Path) -> None:
    code, script, _ = _cli("completion", "bash")
    assert code == 0
    path = tmp_path / "rlvitals.bash"
    path.write_text(script)
    (tmp_path / "train.log").write_text("step:1 - actor/entropy:0.5\n")
    assert _bash_complete(path, ["rlvitals", "dia"], tmp_path) == ["diagnose"]
    assert _bash_complete(path, ["rlvitals", "diagnose", "--la"], tmp_path) == ["--lang"]
    assert _bash_complete(path, ["rlvitals", "diagnose", "--lang", ""], tmp_path) == ["en", "zh"]
    assert _bash_complete(path, ["rlvitals", "diagnose", "tr"], tmp_path) == ["train.log"]
    assert _bash_complete(path, ["rlvitals", "watch", "--state", "tr"], tmp_path) == ["train.log"]
    assert _bash_complete(path, ["rlvitals", "diagnose", "--sco"], tmp_path) == ["--score"]  # a group's option
    assert "actor/entropy" in _bash_complete(path, ["rlvitals", "explain", "actor/entr"], tmp_path)
    assert _bash_complete(path, ["rlvitals", "completion", ""], tmp_path) == ["bash", "fish", "zsh"]


def _script(shell: str, tmp_path: Path) -> Path:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (scripts/test installs it)")
    code, script, _ = _cli("completion", shell)
    assert code == 0
    path = tmp_path / f"rlvitals.{shell}"
    path.write_text(script)
    return path


@pytest.mark.process
def test_the_fish_script_completes_in_a_real_fish(tmp_path: Path) -> None:
    path = _script("fish", tmp_path)

    def offered(line: str) -> list[str]:
        done = subprocess.run(["fish", "-c", f"source {shlex.quote(str(path))}; complete -C{shlex.quote(line)}"],
                              capture_output=True, text=True, check=True)
        return sorted(x.split("\t")[0] for x in done.stdout.splitlines())

    assert offered("rlvitals dia") == ["diagnose"]
    assert offered("rlvitals diagnose --fail") == ["--fail-on"]
    assert offered("rlvitals diagnose --lang ") == ["en", "zh"]
    assert "actor/entropy" in offered("rlvitals explain actor/entr")


@pytest.mark.process
def test_the_zsh_script_registers_the_bash_completion_through_bashcompinit(tmp_path: Path) -> None:
    """zsh runs the same function as bash (tested above) through bashcompinit: the script is valid zsh
    and, sourced after compinit, makes that function rlvitals' completion."""
    path = _script("zsh", tmp_path)
    assert subprocess.run(["zsh", "-n", str(path)], capture_output=True, text=True).returncode == 0
    program = f"autoload -U compinit && compinit -u -D; source {shlex.quote(str(path))}; print -r -- $_comps[rlvitals]"
    done = subprocess.run(["zsh", "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "_bash_complete -o filenames -o bashdefault -F _rlvitals"
