"""Held-out workloads (spaces/heldout/, benchmarks/README.md): their learning-curve tables say so in their header, a
tuning path cannot read one (benchmarks/replay.py refuses it), and the reporting path can. Tiny hand-made tables."""

import gzip
import json
import sys

import pytest

from benchmarks import replay_cli
from benchmarks.curve_table import held_out
from benchmarks.replay import _REPORTING, CurveTable, _table
from tests.conftest import REPO
from trainables.foundation.errors import UsageError
from trainables.foundation.space import builtin_space_names, load_space

GRID = {"batch_size": [64], "dropout": [0.0], "hidden": [128, 256], "layers": [1], "lr": [0.001]}


def write_table(path, flag: bool = True) -> str:
    """A 2-configuration, 2-seed, 3-epoch table of mlp_mnist's keys, held out when `flag`."""
    header = {"space": "mlp_mnist", "epochs": 3, "seeds": [0, 1], "grid": GRID, "command": "test"}
    if flag:
        header.update(held_out=True, workload="digits_mlp")
    with gzip.open(path, "wt") as stream:
        stream.write(json.dumps(header) + "\n")
        for hidden, val in ((128, [0.5, 0.6, 0.7]), (256, [0.6, 0.8, 0.9])):
            config = {name: values[0] for name, values in GRID.items()} | {"hidden": hidden}
            for seed in (0, 1):
                row = {"config": config, "seed": seed, "val": val, "test": val, "s": [1.0, 2.0, 3.0]}
                stream.write(json.dumps(row) + "\n")
    return str(path)


def cli(monkeypatch, *args: str) -> None:
    monkeypatch.setattr(sys, "argv", ["replay_cli", *args])
    replay_cli.main()


def test_a_tuning_path_cannot_read_a_held_out_table(tmp_path, monkeypatch, capsys):
    path = write_table(tmp_path / "heldout.jsonl.gz")
    for read in (CurveTable.load, _table):  # every reader: the table itself, the replays' cached one
        with pytest.raises(UsageError, match="held-out table .workload digits_mlp.: no default may be chosen on it"):
            read(path)
    for seeds in (
        ["--seed-set", "tuning"],
        ["--seeds", "3", "--first-seed", "398"],
        ["--seeds", "2", "--first-seed", "9000"],
    ):
        with pytest.raises(SystemExit) as exit_:
            cli(monkeypatch, path, *seeds, "--concurrency", "2", "--arms", "search,random_asha", "--jobs", "1")
        assert exit_.value.code == 2 and "held-out table" in capsys.readouterr().err
    plain = CurveTable.load(write_table(tmp_path / "plain.jsonl.gz", flag=False))
    assert not plain.held_out and len(plain.val) == 2


def test_the_reporting_path_reads_a_held_out_table_and_its_results_say_so(tmp_path, monkeypatch):
    """Only a registered family that names the table opens it: whatever the seeds, a comparison of one's own (a
    tuning one) is refused above."""
    from benchmarks import families

    path = write_table(tmp_path / "heldout.jsonl.gz")
    registry = tmp_path / "families.json"
    entry = {"kind": "arms", "registered": "in advance", "tables": [path], "arms": ["search", "random_asha"]}
    entry |= {"seeds": ["9000-9001"], "concurrency": [2], "trials": 12, "test": "Wilcoxon", "correction": "Holm"}
    registry.write_text(json.dumps({"families": {"held-out-test": entry}}))
    monkeypatch.setattr(families, "REGISTRY", registry)
    monkeypatch.setattr(families, "GRANDFATHERED", {"held-out-test"})  # the reporting path, not the order
    out = tmp_path / "report.json"
    arms = ["--family", "held-out-test", "--jobs", "1", "--out", str(out)]
    cli(monkeypatch, path, "--seeds", "2", "--first-seed", "9000", *arms)
    figures = json.loads(out.read_text())
    assert figures["held_out"] is True and set(figures["concurrency"]["2"]["arms"]) == {"search", "random_asha"}
    assert _table(path).held_out  # this process opened it for a report: its forked workers read it too


def test_the_held_out_spaces_search_the_built_in_ranges_on_their_own_data_and_are_no_built_in_ones():
    names = builtin_space_names()
    for workload, source in (("digits_mlp", "mlp_mnist"), ("digits_cnn", "cnn_mnist")):
        space = load_space(f"spaces.heldout.{workload}")
        assert space.name == workload and workload not in names
        assert space.hyperparameters == load_space(source).hyperparameters
        assert space.dataset == "spaces.examples.digits8x8:digits"
        assert held_out(f"spaces.heldout.{workload}") and held_out(f"spaces/heldout/{workload}.py")
    assert not held_out("mlp_mnist") and not held_out("spaces.examples.digits8x8")


def test_the_tuning_mlp_workload_is_not_held_out_and_draws_the_same_balanced_rows_for_every_seed():
    """spaces/tuning/teacher_mlp.py: mlp_mnist's ranges on rows a random teacher net labels; defaults may be chosen on
    it, so its table is no held-out one; 20,000 validation rows, ten classes of about a tenth each, the same draw."""
    import numpy as np

    from spaces.tuning.teacher_mlp import SPLITS, teacher

    space = load_space("spaces.tuning.teacher_mlp")
    assert space.name == "teacher_mlp" and "teacher_mlp" not in builtin_space_names()
    assert space.hyperparameters == load_space("mlp_mnist").hyperparameters
    assert not held_out("spaces.tuning.teacher_mlp") and not held_out("spaces/tuning/teacher_mlp.py")
    first, again = teacher("", 0), teacher("elsewhere", 3)
    assert SPLITS == {"train": 6000, "val": 20000, "test": 20000}  # one validation row is 0.005 points
    assert first.train[1][:12].tolist() == [9, 5, 1, 1, 6, 6, 6, 6, 0, 2, 1, 7]  # the draw the committed table trained
    for split in ("train", "val", "test"):
        rows, labels = getattr(first, split)
        assert rows.shape == (SPLITS[split], 1, 6, 6) and 0 <= rows.min() and rows.max() <= 1
        assert np.array_equal(rows, getattr(again, split)[0]) and np.array_equal(labels, getattr(again, split)[1])
        shares = np.bincount(labels, minlength=10) / len(labels)
        assert shares.min() > 0.08 and shares.max() < 0.12, shares


ARMS = ("random_asha", "random_asha|epoch_budget=972")  # heldout20k-time-972's random + ASHA at 324 and at 972


@pytest.mark.parametrize("workload", ["glyphs20k_cnn", "tabular20k_mlp"])
def test_random_asha_run_on_to_972_trial_epochs_spends_its_first_324_as_at_324(workload):
    """heldout20k-time-972 measures random + ASHA's time to quality past 324 trial-epochs, which its rule allows only
    if the longer budget changes none of the first 324: every seed's epochs to within 0.5 and 0.2 points agree where
    the 324 replay got there (the 972 one got there only later where it did not), the IQM curves by epoch agree, and
    two seeds' traces, replayed here, agree entry for entry."""
    path = str(REPO / f"benchmarks/results/tables/heldout-{workload}-9ep-4seeds.jsonl.gz")
    results = json.loads((REPO / f"benchmarks/results/heldout20k-time-972-{workload}.json").read_text())
    _table(path, held_out_ok=True)  # a registered family's report reads it, as replay_cli --family does
    try:
        check_the_first_324(path, results)
    finally:
        _REPORTING.discard(path)  # no later test of this process finds it open for reading


def check_the_first_324(path: str, results: dict) -> None:
    for k, figures in results["concurrency"].items():
        at_324, at_972 = (figures["arms"][arm] for arm in ARMS)
        for points in ("0.5", "0.2"):
            pairs = zip(at_324["to_within_pt"][points]["epochs"], at_972["to_within_pt"][points]["epochs"])
            assert all(a == b if a is not None else b is None or b > 324 for a, b in pairs), (k, points)
        assert at_324["anytime_iqm_pt"]["epochs"]["iqm"][:324] == at_972["anytime_iqm_pt"]["epochs"]["iqm"][:324]
        for seed in (results["first_seed"], results["first_seed"] + 1):
            short, long = (replay_cli.replay_cli((path, arm, seed, 324, int(k), 324)) for arm in ARMS)
            assert short["epochs"] == 324 and short["trace"] == long["trace"][:324] and long["epochs"] == 972
