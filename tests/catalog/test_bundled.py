"""The package's TOML files read through the cache give what tomllib gives, from a fresh cache, a warm one,
a damaged one and none at all."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

import pytest

from rlvitals.catalog import bundled, bundled_toml, cache_root
from rlvitals.checks.registry import MODULES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FILES = [("rlvitals.catalog", "catalog.toml"), ("rlvitals.catalog", "views.toml"),
         *(("rlvitals.checks", f"{name}.toml") for name in MODULES)]


def _tomllib(package: str, name: str) -> dict[str, object]:
    return tomllib.loads(resources.files(package).joinpath(name).read_text(encoding="utf-8"))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RLVITALS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "toml"


def _no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: str) -> None:
        raise AssertionError("parsed again: the cache was not used")

    monkeypatch.setattr(bundled.tomllib, "loads", refuse)


@pytest.mark.parametrize(("package", "name"), FILES)
def test_a_bundled_file_reads_as_tomllib_reads_it_then_from_the_cache(
        cache: Path, monkeypatch: pytest.MonkeyPatch, package: str, name: str) -> None:
    want = _tomllib(package, name)
    assert bundled_toml(package, name) == want
    (written,) = cache.iterdir()
    _no_parse(monkeypatch)
    got = bundled_toml(package, name)
    assert got == want and list(got) == list(want)  # the keys in the file's order, too
    assert list(cache.iterdir()) == [written]


@pytest.mark.parametrize("damage", ["cut", "flip", "empty"])
def test_a_damaged_cache_file_is_parsed_again_and_written_again(cache: Path, damage: str) -> None:
    want = _tomllib("rlvitals.catalog", "views.toml")
    bundled_toml("rlvitals.catalog", "views.toml")
    (path,) = cache.iterdir()
    blob = path.read_bytes()
    path.write_bytes({"cut": blob[: len(blob) // 2], "empty": b"",
                      "flip": blob[:40] + bytes([blob[40] ^ 0x55]) + blob[41:]}[damage])
    assert bundled_toml("rlvitals.catalog", "views.toml") == want
    assert path.read_bytes() == blob


def test_a_cache_that_cannot_be_written_is_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("RLVITALS_CACHE", str(blocked))
    assert bundled_toml("rlvitals.catalog", "views.toml") == _tomllib("rlvitals.catalog", "views.toml")
    assert blocked.read_text() == "not a folder"


def test_the_cache_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert cache_root({"RLVITALS_CACHE": str(tmp_path)}) == tmp_path
    assert cache_root({"RLVITALS_CACHE": "~/x"}) == Path.home() / "x"
    assert cache_root({}) == Path.home() / ".cache" / "rlvitals"
    monkeypatch.setenv("RLVITALS_CACHE", str(tmp_path / "y"))
    assert cache_root() == tmp_path / "y"
