"""The learning-curve table's grid and its resumable build file (benchmarks/curve_table.py), without training."""

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from benchmarks.curve_table import configurations, grid_of, grid_values, key_of, rows_done, table_rows


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


def test_a_coarser_grid_and_fixed_constants_size_a_build_and_reach_the_replay(tmp_path):
    import gzip
    import json

    from benchmarks.curve_table import configurations, grid_of, parse_fixed
    from benchmarks.replay import CurveTable, table_space
    from trainables.foundation.space import load_space

    grid = grid_of(load_space("cnn_mnist").hyperparameters, log_points=4, linear_points=2)
    assert grid["lr"] == [0.001, 0.006694, 0.04481, 0.3] and grid["momentum"] == [0.5, 0.99]
    assert len(configurations(grid)) == 4 * 2 * 2 * 3
    assert parse_fixed("lr_schedule=cosine") == ("lr_schedule", "cosine") and parse_fixed("grace=2") == ("grace", 2)
    path = tmp_path / "t.jsonl.gz"
    header = {
        "space": "cnn_mnist",
        "epochs": 1,
        "seeds": [0],
        "grid": {"lr": [0.001]},
        "fixed": {"lr_schedule": "cosine"},
    }
    with gzip.open(path, "wt") as stream:
        stream.write(json.dumps(header) + "\n")
        stream.write(json.dumps({"config": {"lr": 0.001}, "seed": 0, "val": [0.5], "test": [0.5], "s": [1.0]}) + "\n")
    assert table_space(CurveTable.load(path)).constants["lr_schedule"] == "cosine"


def test_a_grid_sized_per_key_and_a_build_resumed_on_it_keeps_only_its_rows(tmp_path):
    import json

    from trainables.foundation.space import load_space

    points = {"lr": 3, "weight_decay": 2, "label_smoothing": 2, "shift": 2}
    grid = grid_of(load_space("resnet_mnist").hyperparameters, points=points)
    assert grid["lr"] == [0.005, 0.05, 0.5] and grid["shift"] == [0, 4] and grid["batch_size"] == [32, 64, 128, 256]
    assert len(configurations(grid)) == 3 * 2 * 2 * 2 * 4
    kept = configurations(grid)[0]
    finer = {**kept, "lr": 0.02321}  # a finer grid's lr
    row = {"val": [0.5], "test": [0.5], "s": [1.0]}
    lines = [{"config": c, "seed": seed, **row} for c, seed in ((kept, 1), (finer, 1), (kept, 9))]
    partial = tmp_path / "t.partial"
    partial.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert [(r["config"], r["seed"]) for r in table_rows(partial, grid, [0, 1])] == [(kept, 1)]


def tiny_space(folder):
    """mlp_mnist's keys on 200 4x4 images of two classes, dark and light; no validation split given (one is carved)."""
    space = folder / "tiny.py"
    space.write_text(
        "import dataclasses\nimport numpy as np\nfrom spaces import OwnData\nfrom spaces.mlp_mnist import SPACE\n"
        "def tiny(root, seed):\n"
        "    labels = np.arange(200) % 2\n"
        "    images = (labels[:, None, None, None] * 200 + np.zeros((200, 1, 4, 4))).astype(np.uint8)\n"
        "    return OwnData(train=(images[:160], labels[:160]), test=(images[160:], labels[160:]),\n"
        "                   class_names=['a', 'b'])\n"
        "SPACE = dataclasses.replace(SPACE, name='tiny', dataset=f'{__file__}:tiny')\n"
    )
    return space


def test_a_space_with_its_own_data_trains_a_row_without_an_mnist_folder(tmp_path):
    from benchmarks.curve_table import train_row
    from trainables.foundation.errors import UsageError

    space = tiny_space(tmp_path)
    config = {"batch_size": 64, "dropout": 0.0, "hidden": 128, "layers": 1, "lr": 0.01}
    row = train_row(("", str(space), config, 0, 2, "cpu", {}, {"limit": 0}))
    assert row["config"] == config and len(row["val"]) == len(row["test"]) == len(row["s"]) == 2
    assert row["test"][-1] == 1.0  # it learned its own data, which no MNIST folder holds
    with pytest.raises(UsageError, match=r"data\.val_fraction=1\.5"):  # --val-fraction reaches the run's data
        train_row(("", str(space), config, 0, 2, "cpu", {}, {"limit": 0, "val_fraction": 1.5}))


def test_a_held_out_spaces_table_says_so_in_its_header(tmp_path, monkeypatch):
    import gzip
    import json
    import sys

    from benchmarks import curve_table
    from benchmarks.replay import CurveTable
    from trainables.foundation.errors import UsageError
    from trainables.foundation.space import load_space

    out = tmp_path / "heldout-digits_mlp.jsonl.gz"
    grid = grid_of(load_space("spaces.heldout.digits_mlp").hyperparameters, 2, 2)
    row = {"val": [0.5], "test": [0.5], "s": [1.0]}  # every row already built: the build only writes the table
    rows = "".join(json.dumps({"config": config, "seed": 0, **row}) + "\n" for config in configurations(grid))
    settings = ["spaces.heldout.digits_mlp", "", 1, "cpu", {}, {"limit": 0, "val_fraction": 0.1}]  # 0.1: the run's
    out.with_name(out.name + ".partial").write_text(json.dumps({"settings": settings}) + "\n" + rows)
    argv = ["--space", "spaces.heldout.digits_mlp", "--epochs", "1", "--seeds", "0", "--jobs", "1", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", ["curve_table", *argv, "--log-points", "2", "--linear-points", "2"])
    curve_table.main()
    with gzip.open(out, "rt") as stream:
        header = json.loads(stream.readline())
    assert header["held_out"] is True and header["workload"] == "digits_mlp" and "val_fraction" not in header
    with pytest.raises(UsageError, match="held-out"):
        CurveTable.load(out)
    assert CurveTable.load(out, held_out_ok=True).held_out == "digits_mlp"


def test_the_new_held_out_workloads_search_the_built_in_ranges_with_2000_validation_and_test_examples():
    import importlib

    from benchmarks.curve_table import held_out
    from trainables.foundation.space import load_space

    pairs = [("glyphs_cnn", "cnn_mnist"), ("tabular_mlp", "mlp_mnist")]
    for workload, source in pairs + [("glyphs20k_cnn", "cnn_mnist"), ("tabular20k_mlp", "mlp_mnist")]:
        space = load_space(f"spaces.heldout.{workload}")
        assert space.name == workload and space.hyperparameters == load_space(source).hyperparameters
        assert held_out(f"spaces.heldout.{workload}") and held_out(f"spaces/heldout/{workload}.py")
        splits = importlib.import_module(f"spaces.heldout.{workload}").SPLITS
        assert splits["val"] >= 2000 and splits["test"] >= 2000  # one example at most 0.05 points
        assert min(splits["val"], splits["test"]) >= 20000 or workload in dict(pairs)  # new draws: 0.005 points each
        assert space.dataset.rsplit(":", 1)[0].endswith(f"spaces/heldout/{workload}.py")  # its own data


def test_the_20k_draws_are_new_data_of_the_same_workloads_and_the_first_draws_are_unchanged(monkeypatch):
    """glyphs20k_cnn and tabular20k_mlp draw other classes than glyphs_cnn and tabular_mlp (not their rows again, more
    of them); the first draws' data are what their tables were built on (a hash of every split)."""
    import hashlib

    import numpy as np

    from spaces.heldout import glyphs20k_cnn, glyphs_cnn, tabular20k_mlp, tabular_mlp

    def digest(data) -> str:
        h = hashlib.sha256()
        for name in ("train", "val", "test"):
            for array in getattr(data, name):
                h.update(np.ascontiguousarray(array).tobytes())
        return h.hexdigest()[:16]

    first = {"glyphs_cnn": glyphs_cnn.glyphs("", 0), "tabular_mlp": tabular_mlp.tabular("", 0)}
    assert {name: digest(data) for name, data in first.items()} == {
        "glyphs_cnn": "126d592c34093b50",
        "tabular_mlp": "88176b3adbb73cc9",
    }
    rows = tabular20k_mlp.tabular("", 0)
    assert [len(rows.train[1]), len(rows.val[1]), len(rows.test[1])] == [6000, 20000, 20000]
    monkeypatch.setattr(tabular20k_mlp, "make_rows", lambda state, splits: (state, splits))
    assert tabular20k_mlp.tabular("", 0) == (2311, tabular20k_mlp.SPLITS)  # other clusters than random state 72's
    assert glyphs20k_cnn.SPLITS == {"train": 6000, "val": 20000, "test": 20000}  # 46,000 glyphs take seconds: a few
    monkeypatch.setattr(glyphs20k_cnn, "make_glyphs", lambda state, splits: (state, splits))
    state, splits = glyphs20k_cnn.glyphs("", 0)
    assert splits == glyphs20k_cnn.SPLITS and state != 72
    few = {"train": 40, "val": 0, "test": 0}
    assert not np.allclose(glyphs_cnn.make_glyphs(72, few).train[0], glyphs_cnn.make_glyphs(state, few).train[0])


def test_a_build_resumes_only_rows_of_its_own_settings_and_records_its_val_fraction(tmp_path, monkeypatch, capsys):
    import gzip
    import json
    import sys

    from benchmarks import curve_table
    from trainables.foundation.space import load_space

    space, out = tiny_space(tmp_path), tmp_path / "tiny.jsonl.gz"
    partial = tmp_path / "tiny.jsonl.gz.partial"
    configs = configurations(grid_of(load_space(str(space)).hyperparameters, 2, 2))
    row = {"val": [0.5], "test": [0.5], "s": [1.0]}  # every row already built: the build only writes the table
    rows = "".join(json.dumps({"config": config, "seed": 0, **row}) + "\n" for config in configs)
    built = {"settings": [str(space), "", 1, "cpu", {}, {"limit": 0, "val_fraction": 0.5}]}  # a build at 0.5

    def build(space_ref, *options):
        argv = ["--space", space_ref, "--epochs", "1", "--seeds", "0", "--jobs", "1", "--out", str(out)]
        monkeypatch.setattr(sys, "argv", ["curve_table", *argv, "--log-points", "2", "--linear-points", "2", *options])
        curve_table.main()

    refusals = [(rows, (str(space), "--val-fraction", "0.5"), "first line says")]  # rows that say no settings
    for other in ([], ["--val-fraction", "0.2"], ["--epochs", "2"], ["--limit", "100"], ["--fixed", "width=8"]):
        refusals.append((json.dumps(built) + "\n" + rows, (str(space), *other), "first line says"))
    refusals += [(rows, (str(space), "--val-fraction", "1.5"), "in (0, 1)")]
    refusals += [(rows, ("spaces.heldout.tabular_mlp", "--val-fraction", "0.5"), "gives its own validation split")]
    for text, args, says in refusals:  # another build's rows would join these; a share outside (0, 1); no carving
        partial.write_text(text)
        with pytest.raises(SystemExit) as refused:
            build(*args)
        assert refused.value.code == 2 and says in capsys.readouterr().err and not out.exists()
        assert partial.read_text() == text  # refused before a line was written
    partial.write_text(json.dumps(built) + "\n" + rows)
    build(str(space), "--val-fraction", "0.5")
    with gzip.open(out, "rt") as stream:
        assert json.loads(stream.readline())["val_fraction"] == 0.5 and len(stream.readlines()) == len(configs)
    assert not partial.exists()
