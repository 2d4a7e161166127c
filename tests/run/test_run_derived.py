"""Run.with_series: per-step series derived from rollouts join the run's step axis."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from runs import make_run


def test_derived_series_join_and_logged_values_win() -> None:
    run = make_run({"actor/entropy": [0.5, 0.4, 0.3], "group/zero_std/share": [0.1, np.nan, np.nan]})
    derived = pl.DataFrame({"step": [2, 3, 4], "group/zero_std/share": [0.2, 0.3, 0.4], "pass@4": [0.5, 0.6, 0.7]})
    out = run.with_series(derived)
    assert out.steps.tolist() == [1, 2, 3, 4]
    assert out.frame["group/zero_std/share"].to_list() == [0.1, 0.2, 0.3, 0.4]
    assert out.frame["pass@4"].to_list() == [None, 0.5, 0.6, 0.7]
    assert out.frame["actor/entropy"].to_list() == [0.5, 0.4, 0.3, None]
    assert out.train_steps.tolist() == [1, 2, 3, 4]
    assert out.raw.height == 4 and "derived from rollouts" in out.notes[-1]
    assert run.steps.tolist() == [1, 2, 3]  # the original run is unchanged
    steps, values = out.series("pass@4")
    assert steps.tolist() == [2, 3, 4] and values.tolist() == [0.5, 0.6, 0.7]


def test_derived_keys_must_be_catalog_keys() -> None:
    run = make_run({"actor/entropy": [0.5, 0.4]})
    with pytest.raises(ValueError, match=r"derived series \['my_metric'\] are not catalog keys"):
        run.with_series(pl.DataFrame({"step": [1], "my_metric": [1.0]}))
