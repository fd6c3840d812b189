"""The replay benchmark's logic (benchmarks/replay.py, replay_figures.py) on hand-made tables: the search's ASHA stops
and promotes as Tune's rungs say, the budget cuts, the incumbent is chosen by the replayed seed's score and judged by
the mean test score, and the statistics are right on known samples. No Ray instance (ASHA is Tune's object)."""

import gzip
import json

import numpy as np
import pytest
from optuna.distributions import FloatDistribution

from benchmarks.replay import ARMS, CurveTable, FixedArm, exhaustive_regret, nearest, regret_trace, replay
from benchmarks.replay_cli import ARMS as CLI_ARMS
from benchmarks.replay_cli import replay_cli
from benchmarks.replay_figures import bootstrap_interval, epochs_to_reach, iqm, p_lower, summarise
from trainables.foundation.space import load_space

SPACE = load_space("mlp_mnist")  # grace 1 at 3 epochs (no lr warm-up), reduction 3: one rung, at epoch 1
GRID = {"batch_size": [64], "dropout": [0.0], "hidden": [128, 256, 512], "layers": [1], "lr": [0.001]}
A, B, C = ({**{k: v[0] for k, v in GRID.items()}, "hidden": hidden} for hidden in (128, 256, 512))


def write_table(path, curves: dict[int, tuple[list, list]], seeds=(0, 1)) -> str:
    """curves: hidden -> (val per seed, test per seed), each [seed][epoch]."""
    header = {"space": "mlp_mnist", "epochs": 3, "seeds": list(seeds), "grid": GRID, "command": "test"}
    with gzip.open(path, "wt") as stream:
        stream.write(json.dumps(header) + "\n")
        for hidden, (val, test) in curves.items():
            config = {**A, "hidden": hidden}
            for slot, seed in enumerate(seeds):
                row = {"config": config, "seed": seed, "val": val[slot], "test": test[slot], "s": [1.0] * 3}
                stream.write(json.dumps(row) + "\n")
    return str(path)


@pytest.fixture
def table(tmp_path) -> CurveTable:
    same = lambda curve: [curve, curve]  # noqa: E731 - both seeds alike
    return CurveTable.load(
        write_table(
            tmp_path / "t.jsonl.gz",
            {
                128: (same([0.5, 0.6, 0.7]), same([0.5, 0.6, 0.7])),
                256: ([[0.9, 0.9, 0.9], [0.4, 0.4, 0.4]], same([0.85, 0.85, 0.85])),
                512: (same([0.1, 0.2, 0.3]), same([0.95, 0.95, 0.95])),
            },
        )
    )


def test_the_searchs_asha_stops_below_the_rungs_cutoff(table):
    # C at epoch 1 (0.1) is below the 66.7th percentile of the rung's {0.5, 0.9} (0.767); A and B pass
    arm = FixedArm(SPACE, [A, B, C], 3)
    run = replay(table, SPACE, arm, seed=0, budget=9)
    assert arm.reached == [3, 3, 1] and run.spent == 7


def test_the_budget_cuts_the_last_trial(table):
    arm = FixedArm(SPACE, [A, B, C], 3)
    run = replay(table, SPACE, arm, seed=0, budget=4)
    assert arm.reached == [3, 1] and run.spent == 4 and len(run.regret) == 4


def test_the_incumbent_is_chosen_by_the_seeds_val_and_judged_by_mean_test(table):
    best = 0.95  # C's mean test, though its val is the lowest
    on_seed_0 = replay(table, SPACE, FixedArm(SPACE, [A, B], 3), seed=0, budget=6).regret
    assert on_seed_0 == pytest.approx([best - 0.5, best - 0.6, best - 0.7, best - 0.85, best - 0.85, best - 0.85])
    arm = FixedArm(SPACE, [A, B], 3)
    on_seed_1 = replay(table, SPACE, arm, seed=1, budget=6).regret
    assert on_seed_1[3] == pytest.approx(best - 0.7)  # B's val is 0.4 on seed 1: A stays the incumbent
    assert arm.reached == [3, 1]  # and B is below the rung's cutoff (A's 0.5)


def test_the_floor_trains_everything_and_chooses_by_each_seeds_val(table):
    # seed 0 chooses B (val 0.9, test 0.85), seed 1 chooses A (val 0.7, test 0.7); the best mean test is C's 0.95
    assert exhaustive_regret(table, SPACE) == pytest.approx(((0.95 - 0.85) + (0.95 - 0.7)) / 2)


def test_a_proposal_snaps_to_the_nearest_grid_point_in_log_space_for_a_log_float():
    lr = FloatDistribution(1e-4, 1e-2, log=True)
    assert nearest([1e-4, 1e-3, 1e-2], 3.5e-4, lr) == 1e-3
    assert nearest([1e-4, 1e-3, 1e-2], 3.5e-4) == 1e-4
    assert nearest([64, 128], 100) == 128 and nearest(["adam", "sgd"], "sgd") == "sgd"


@pytest.mark.parametrize("arm", ARMS)
def test_every_arm_spends_the_budget_on_the_shipped_table(arm):
    trace = regret_trace(("benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz", arm, 0, 12))
    assert len(trace) == 12 and all(0 <= regret < 0.5 for regret in trace)


def test_statistics_on_known_samples():
    assert iqm([0, 1, 2, 3, 4, 5, 6, 100]) == pytest.approx(3.5)  # the middle half: 2, 3, 4, 5
    values = np.random.default_rng(0).normal(1.0, 0.1, 200)
    low, high = bootstrap_interval(values)
    assert low < iqm(values) < high and high - low < 0.05
    assert p_lower(values, values + 0.1) < 1e-6 and p_lower(values + 0.1, values) > 0.99
    traces = np.array([[3.0, 2.0, 1.0], [3.0, 1.0, 1.0], [2.0, 2.0, 0.5]])
    assert epochs_to_reach(traces, 2.0) == 2 and epochs_to_reach(traces, 0.1) is None


def test_the_summary_tests_ours_against_every_other_arm():
    rng = np.random.default_rng(1)
    arrays = {"search": rng.normal(1.0, 0.1, (50, 4)), "random": rng.normal(2.0, 0.1, (50, 4))}
    summary = summarise(arrays, 4)
    assert summary["arms"]["search"]["p_search_lower"] is None
    assert summary["arms"]["random"]["p_search_lower"] < 1e-6
    assert summary["arms"]["search"]["epochs_to_baseline_median"] == 1
    assert set(summary["arms"]["random"]["regret"]) == {"0.25", "0.5", "1"}


def test_a_search_replayed_as_the_cli_runs_it_proposes_its_trials_side_by_side_in_wall_time():
    from benchmarks.replay_cli import FIRST_START_S

    table = "benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz"
    one, two = (replay_cli((table, "search", 0, 6, k)) for k in (1, 2))
    for run in (one, two):
        times = [at for at, _ in run["trace"]]
        assert times == sorted(times) and times[0] > FIRST_START_S  # the first epoch ends after the first start
        assert 6 <= run["epochs"] <= 18 and len(run["trace"]) == run["epochs"]
        assert all(regret >= 0 for _, regret in run["trace"])
    assert two["wall_s"] < one["wall_s"]  # two slots: the starts and epochs overlap
    assert replay_cli((table, "search", 0, 6, 2)) == two  # one seed, one replay
    assert replay_cli((table, "search", 0, 24, 2, 12))["epochs"] == 12  # an epoch budget: spent, then stopped


def test_holm_adjusts_a_family_of_p_values_step_down():
    from benchmarks.hpo_tables import holm

    assert holm({"a": 0.01, "b": 0.04, "c": 0.03}) == pytest.approx({"a": 0.03, "c": 0.06, "b": 0.06})
    assert holm({"a": 0.6, "b": 0.9}) == {"a": 1.0, "b": 1.0}


@pytest.mark.parametrize("arm", CLI_ARMS)
def test_every_arm_replays_as_the_cli_runs_it(arm):
    run = replay_cli(("benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz", arm, 1, 8, 2))
    assert 8 <= run["epochs"] <= 24 and 0 <= run["regret"] < 0.5
