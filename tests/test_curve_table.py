"""The learning-curve table's grid and its resumable build file (benchmarks/curve_table.py), without training."""

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from benchmarks.curve_table import configurations, grid_of, grid_values, key_of, rows_done


def test_grid_values_are_ordinal_points_of_each_distribution():
    assert grid_values(CategoricalDistribution([64, 128, 256])) == [64, 128, 256]
    assert grid_values(IntDistribution(1, 3)) == [1, 2, 3]
    assert grid_values(IntDistribution(1, 100)) == [1, 15, 29, 43, 58, 72, 86, 100]
    assert grid_values(FloatDistribution(0.0, 0.5)) == [0.0, 0.1667, 0.3333, 0.5]
    log = grid_values(FloatDistribution(1e-4, 1e-2, log=True))
    assert log[0] == 1e-4 and log[-1] == 1e-2 and len(log) == 8
    assert all(b / a == pytest.approx(10 ** (2 / 7), rel=1e-3) for a, b in zip(log, log[1:]))


def test_every_combination_once_in_a_fixed_order():
    grid = grid_of({"b": CategoricalDistribution(["x", "y"]), "a": IntDistribution(1, 3)})
    assert list(grid) == ["a", "b"]
    combos = configurations(grid)
    assert combos[:2] == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}] and len(combos) == 6
    assert len({key_of(c, 0) for c in combos}) == 6


def test_a_stopped_build_resumes_from_its_whole_rows(tmp_path):
    partial = tmp_path / "t.jsonl.gz.partial"
    whole = '{"config": {"a": 1}, "seed": 0, "val": [0.5], "test": [0.4], "s": [1.0]}\n'
    partial.write_text(whole + '{"config": {"a": 2}, "se')  # the build was killed mid-line
    assert list(rows_done(partial)) == [key_of({"a": 1}, 0)]
    assert rows_done(tmp_path / "missing") == {}
