"""The safe Python-literal parser behind the console readers (OpenRLHF, TRL, veRL's config dump)."""

from __future__ import annotations

import contextlib
import math
import pprint
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvitals.ingest.pyrepr import ReprError, flatten, metric_values, parse, parse_dict, parse_dump

floats = st.floats(allow_nan=True, allow_infinity=True)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@given(st.dictionaries(st.text(), floats))
def test_repr_of_a_flat_float_dict_round_trips(d: dict[str, float]) -> None:
    got = parse_dict(repr(d))
    assert _same(got, d)


scalars = st.one_of(st.none(), st.booleans(), st.integers(), floats, st.text(max_size=20))
nested = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=10), nested, max_size=6))
def test_repr_and_pprint_of_nested_values_round_trip(d: dict[str, object]) -> None:
    assert _same(parse_dict(repr(d)), d)
    dumped = pprint.pformat(d, width=30)
    assert _same(parse_dict(dumped), d)
    dump = parse_dump(dumped)
    assert dump.cut is None and dump.repairs == 0 and _same(dump.value, d)


literal_chars = st.text(st.sampled_from("{}[]()'\",:.-+eE0123456789 \n\\xuUNnaifTrueFalsNonp_tensor=<>"))


@given(st.one_of(st.text(), literal_chars))
@settings(max_examples=500)
def test_any_text_parses_or_raises_repr_error(text: str) -> None:
    with contextlib.suppress(ReprError):
        parse(text)
    with contextlib.suppress(ReprError):
        parse_dump("{" + text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{'a': np.float64(0.0070)}", {"a": 0.007}),
        ("{'a': np.int64(3), 'b': np.float32(-1.5e-3)}", {"a": 3, "b": -0.0015}),
        ("{'a': tensor(0.25)}", {"a": 0.25}),
        ("{'a': tensor(0.25, device='cuda:0')}", {"a": 0.25}),
        ("{'a': tensor(2., device='cuda:0', dtype=torch.bfloat16, grad_fn=<MeanBackward0>)}", {"a": 2.0}),
        ("{'a': -inf, 'b': inf, 'c': +1}", {"a": -math.inf, "b": math.inf, "c": 1}),
        ("{'a': float('nan')}", {"a": math.nan}),
        ("{'a': None, 'b': True, 'c': False}", {"a": None, "b": True, "c": False}),
        ("{'s': 'it\\'s \\n ok', \"t\": \"q'\"}", {"s": "it's \n ok", "t": "q'"}),
        ("{'u': '\\xe9\\u4e2d\\U0001f600\\N{BULLET}'}", {"u": "é中😀•"}),
        ("{'gen': ['text', 0.5], 'nested': {'x': (1, 2), 'y': ()}}",
         {"gen": ["text", 0.5], "nested": {"x": [1, 2], "y": []}}),
        ("{'wrapped': ('part one '\n            'part two')}", {"wrapped": "part one part two"}),
        ("  {'trailing': 1,}  ", {"trailing": 1}),
    ],
)
def test_reads_the_values_trainers_print(text: str, expected: dict[str, object]) -> None:
    assert _same(parse_dict(text), expected)


@pytest.mark.parametrize(
    ("text", "pos", "what"),
    [
        ("{'a': 1,, }", 8, "expected a value"),
        ("{'a': np.float64(nan}", 20, "expected ')'"),
        ("{'a': 1", 7, "expected ',' or '}'"),
        ("{'a': 'open}", 6, "expected a closed string"),
        ("{'a': os.system('x')}", 6, "expected a value"),
        ("{'a': 1} tail", 9, "expected the end of the text"),
        ("['not', 'a dict']", 0, "expected '{'"),
        ("{'a': float('x')}", 6, "float('x') is not a number"),
        ("{['k']: 1}", 1, "a list cannot be a dict key"),
    ],
)
def test_malformed_input_raises_with_the_position(text: str, pos: int, what: str) -> None:
    with pytest.raises(ReprError, match=f"^at character {pos}: .*{re.escape(what)}") as info:
        parse_dict(text)
    assert info.value.pos == pos
    assert isinstance(info.value, ValueError)


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    with pytest.raises(ReprError, match="nested deeper than"):
        parse("[" * 500 + "]" * 500)


def test_metric_values_keeps_scalars_only() -> None:
    got = metric_values({"loss": 1, "ok": True, "none": None, "mode": "schedule",
                         "generated_samples": ["text", 1.0], "sub": {"x": 1}, 3: 4.0, "big": 10**400})
    assert set(got) == {"loss", "ok", "none", "mode", "big"}
    assert got["loss"] == 1.0 and got["ok"] == 1.0 and math.isnan(got["none"])  # type: ignore[arg-type]
    assert got["mode"] == "schedule" and got["big"] == math.inf


def test_flatten_joins_nested_keys_with_dots() -> None:
    got = flatten({"algorithm": {"adv_estimator": "gae", "kl_ctrl": {"kl_coef": 0.001}},
                   "override_config": {}, "logger": ["console"]})
    assert got == {"algorithm.adv_estimator": "gae", "algorithm.kl_ctrl.kl_coef": 0.001,
                   "override_config": {}, "logger": ["console"]}


def test_dump_cut_short_keeps_what_came_before() -> None:
    text = "{'a': {'b': 1,\n       'c': 'x'},\n 'd': 2,(Worker pid=1) garbage"
    dump = parse_dump(text)
    assert dump.value == {"a": {"b": 1, "c": "x"}, "d": 2}
    assert dump.cut == text.index("(Worker")


def test_dump_with_lost_lines_is_placed_by_indentation() -> None:
    # Ray dropped the line "                         'w': 0}}," that closed two dicts
    text = (
        "{'critic': {'model': {'path': 'p',\n"
        "                      'fsdp': {'a': False,\n"
        "            'optim': {'lr': 1e-05}},\n"
        " 'trainer': {'total_epochs': 15}}"
    )
    with pytest.raises(ReprError):
        parse_dict(text)
    dump = parse_dump(text)
    assert flatten(dump.value) == {"critic.model.path": "p", "critic.model.fsdp.a": False,
                                   "critic.optim.lr": 1e-05, "trainer.total_epochs": 15}
    assert dump.cut is None and dump.repairs == 2


def test_dump_drops_an_item_whose_opening_line_was_lost() -> None:
    # the line "            'model': {'x': 1," was dropped: 'y' is deeper than any open dict
    text = "{'critic': {'a': 1,\n                      'y': 2},\n 'd': 3}"
    dump = parse_dump(text)
    assert dump.value == {"critic": {"a": 1}, "d": 3}
    assert dump.repairs == 1
