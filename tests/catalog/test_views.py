"""views.toml: every key it names is a catalog metric, and a malformed file is refused by name."""

from __future__ import annotations

import pytest

from rlvitals.catalog.catalog import load_catalog
from rlvitals.catalog.views import VALIDATION, load_views, parse_views
from rlvitals.errors import CatalogError


def test_every_key_of_the_views_is_a_canonical_catalog_key() -> None:
    catalog = load_catalog()
    views = load_views()
    for key in views.keys():  # noqa: SIM118 - Views.keys() is a method, not a dict's
        assert catalog.find(key) is not None and catalog.find(key).key == key, key


def test_every_family_of_an_algorithm_has_a_first_screen_that_opens_with_its_validation() -> None:
    views = load_views()
    families = {a.family for a in load_catalog().algorithms}
    for family in families:
        assert family in views.slots, family
        assert views.first_look(family)[0][0] == VALIDATION


def test_an_unknown_family_reads_as_rl() -> None:
    assert load_views().first_look("no-such-family") == load_views().first_look("rl")


@pytest.mark.parametrize(("data", "words"), [
    ({}, "[first_look] needs a list of slots per family"),
    ({"first_look": {"rl": [[]]}, "clock": {"step_seconds": []}}, "rl must be a list of non-empty lists"),
    ({"first_look": {"rl": [["a"]]}}, "[clock] needs step_seconds"),
])
def test_a_malformed_views_file_is_refused_naming_the_table(data: dict, words: str) -> None:
    with pytest.raises(CatalogError, match="views.toml") as err:
        parse_views(data)
    assert words in str(err.value)
