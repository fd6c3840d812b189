"""The replays' logic (benchmarks/replay.py, replay_arms.py, replay_cli.py, replay_stats.py, statistics.py) on
hand-made tables: the search's ASHA stops and promotes as Tune's rungs say, the budget cuts, the incumbent is chosen
by the replayed seed's score and judged by the mean test score, and the statistics are right on known samples. No
Ray instance (ASHA is Tune's object)."""

import dataclasses
import gzip
import json
import zlib

import numpy as np
import pytest
from optuna.distributions import FloatDistribution

from benchmarks.replay import CurveTable, FixedArm, nearest, replay_search
from benchmarks.replay_arms import ARMS as CLI_ARMS
from benchmarks.replay_cli import replay_cli
from benchmarks.statistics import bootstrap_interval, iqm
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


def replay(table, configs, seed, epoch_budget=0) -> tuple[list[int], list[float]]:
    """The given configurations replayed one after another under the search's ASHA: each trial's epochs, and the
    regret after each epoch."""
    run = replay_search(table, SPACE, FixedArm(SPACE, configs, 3), seed, len(configs), epoch_budget=epoch_budget)
    return [len(trial["rows"]) for trial in run["trials"].values()], [regret for _, regret in run["trace"]]


def test_the_searchs_asha_stops_below_the_rungs_cutoff(table):
    # C at epoch 1 (0.1) is below the 66.7th percentile of the rung's {0.5, 0.9} (0.767); A and B pass
    reached, regret = replay(table, [A, B, C], seed=0)
    assert reached == [3, 3, 1] and len(regret) == 7


def test_the_budget_cuts_the_last_trial(table):
    reached, regret = replay(table, [A, B, C], seed=0, epoch_budget=4)
    assert reached == [3, 1] and len(regret) == 4


def test_the_incumbent_is_chosen_by_the_seeds_val_and_judged_by_mean_test(table):
    best = 0.95  # C's mean test, though its val is the lowest
    _, on_seed_0 = replay(table, [A, B], seed=0)
    assert on_seed_0 == pytest.approx([best - 0.5, best - 0.6, best - 0.7, best - 0.85, best - 0.85, best - 0.85])
    reached, on_seed_1 = replay(table, [A, B], seed=1)
    assert on_seed_1[3] == pytest.approx(best - 0.7)  # B's val is 0.4 on seed 1: A stays the incumbent
    assert reached == [3, 1]  # and B is below the rung's cutoff (A's 0.5)


def test_the_exhaustive_floor_takes_each_seeds_best_val_and_scores_it_by_mean_test(table):
    # seed 0: B's 0.9 at epoch 1 (its later ties not preferred), mean test 0.85; seed 1: A's 0.7 at epoch 3, 0.7
    assert table.exhaustive_floor_pt() == {"per_seed": [10.0, 25.0], "mean": 17.5}


def test_a_tie_in_score_and_epoch_is_decided_as_the_summary_decides_it(tmp_path):
    from search.results.summary import TrialResult, summarize
    from trainables.foundation.trial_files import CHECKPOINT_KEY

    tied = [0.5, 0.6, 0.7]  # A and B: the same validation scores at every epoch; B's test accuracy is higher
    curves = {128: ([tied, tied], [[0.5] * 3] * 2), 256: ([tied, tied], [[0.9] * 3] * 2)}
    tie = CurveTable.load(write_table(tmp_path / "tie.jsonl.gz", curves))
    _, regret = replay(tie, [A, B], seed=0)
    assert regret[-1] == pytest.approx(0.9 - 0.5)  # A, the earlier trial, stays the incumbent: no test in the choice
    history = [{"epoch": e, "val_acc": v, CHECKPOINT_KEY: f"c{e}"} for e, v in enumerate(tied, start=1)]
    records = [TrialResult(str(n), config, history) for n, config in enumerate((A, B))]
    summary = summarize("mlp_mnist", "val_acc", "max", {"epochs": 3}, records, checkpoint_exists=lambda path: True)
    assert summary["best"]["trial_id"] == "0"  # the summary keeps the earlier trial too


def test_a_replayed_search_keeps_its_earliest_trial_among_tied_scores(tmp_path):
    from benchmarks.replay import table_space
    from benchmarks.replay_arms import make_arm

    tied = [0.5, 0.6, 0.7]  # every configuration scores alike on validation; their test accuracies differ
    tests = {128: 0.5, 256: 0.9, 512: 0.95}
    path = write_table(tmp_path / "tie.jsonl.gz", {h: ([tied, tied], [[t] * 3] * 2) for h, t in tests.items()})
    space = table_space(CurveTable.load(path))
    for seed in range(4):
        first = make_arm("random", space, seed, 3, 3).propose("0")  # the trial proposed first
        assert replay_cli((path, "random", seed, 3, 1))["regret"] == pytest.approx(0.95 - tests[first["hidden"]])


def test_a_trial_stopped_mid_schedule_ranks_after_a_finished_one_as_in_the_summary():
    from benchmarks.replay import incumbent, standing_of

    cosine = dataclasses.replace(SPACE, constants={**SPACE.constants, "lr_schedule": "cosine"})
    table = CurveTable("mlp_mnist", 3, [0], GRID, {}, {})
    finished = standing_of([{"epoch": e, "m": 0.8} for e in (1, 2, 3)], {"lr_schedule": "cosine"}, "a", cosine, table)
    stopped = standing_of([{"epoch": 1, "m": 0.99}], {"lr_schedule": "cosine"}, "b", cosine, table)
    assert incumbent({0: stopped, 1: finished}) == ("a", 3)
    assert incumbent({0: finished, 1: finished}) == ("a", 3) and incumbent({0: stopped}) == ("b", 1)


def test_a_proposal_snaps_to_the_nearest_grid_point_in_log_space_for_a_log_float():
    lr = FloatDistribution(1e-4, 1e-2, log=True)
    assert nearest([1e-4, 1e-3, 1e-2], 3.5e-4, lr) == 1e-3
    assert nearest([1e-4, 1e-3, 1e-2], 3.5e-4) == 1e-4
    assert nearest([64, 128], 100) == 128 and nearest(["adam", "sgd"], "sgd") == "sgd"


def test_statistics_on_known_samples():
    assert iqm([0, 1, 2, 3, 4, 5, 6, 100]) == pytest.approx(3.5)  # the middle half: 2, 3, 4, 5
    values = np.random.default_rng(0).normal(1.0, 0.1, 200)
    low, high = bootstrap_interval(values)
    assert low < iqm(values) < high and high - low < 0.05


def test_a_search_replayed_as_the_cli_runs_it_proposes_its_trials_side_by_side_in_wall_time():
    from benchmarks.replay import FIRST_START_S

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
    from benchmarks.statistics import holm

    assert holm({"a": 0.01, "b": 0.04, "c": 0.03}) == pytest.approx({"a": 0.03, "c": 0.06, "b": 0.06})
    assert holm({"a": 0.6, "b": 0.9}) == {"a": 1.0, "b": 1.0}


@pytest.mark.parametrize("arm", CLI_ARMS)
def test_every_arm_replays_as_the_cli_runs_it(arm):
    run = replay_cli(("benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz", arm, 1, 8, 2))
    assert 8 <= run["epochs"] <= 24 and 0 <= run["regret"] < 0.5


def test_anytime_quartiles_hold_a_search_at_its_last_regret_and_none_before_its_first_epoch():
    from benchmarks.statistics import anytime_quartiles

    runs = [{"trace": [(1.0, 0.03), (2.0, 0.01)]}, {"trace": [(1.5, 0.02)]}]
    low, median, high = anytime_quartiles(runs, np.array([0.5, 1.0, 1.5, 3.0]))
    assert median[0] is None and median[1] == pytest.approx(3.0)
    assert median[2] == pytest.approx(2.5) and median[3] == pytest.approx(1.5)
    assert low[3] <= median[3] <= high[3]


def test_anytime_iqm_reads_epochs_and_seconds_and_shows_nothing_until_half_the_seeds_have_an_epoch():
    from benchmarks.statistics import anytime_iqm

    runs = [{"trace": [(1.0, 0.04), (2.0, 0.02), (3.0, 0.01)]}, {"trace": [(2.5, 0.06), (5.0, 0.03)]}]
    by_epochs = anytime_iqm(runs, np.array([1, 2, 3]), "epochs")
    assert by_epochs["iqm"] == pytest.approx([5.0, 2.5, 2.0])  # the second seed keeps its final 3 points at epoch 3
    by_wall = anytime_iqm(runs, np.array([0.5, 1.0, 4.0]), "wall")
    assert by_wall["iqm"][0] is None and by_wall["iqm"][1] == pytest.approx(4.0)  # one of two seeds: shown
    assert by_wall["iqm"][2] == pytest.approx(3.5)  # 1 point and 6 points, 4.0 s into each
    assert all(low <= mid <= high for low, mid, high in zip(by_epochs["low"], by_epochs["iqm"], by_epochs["high"]))


def test_a_replays_summary_holds_iqm_curves_on_both_axes_and_its_figure_draws_both(tmp_path):
    import matplotlib.image

    from benchmarks.replay_cli import summarise
    from benchmarks.statistics import plot_anytime

    def run(regrets):
        trace = [(1.5 * (epoch + 1), regret) for epoch, regret in enumerate(regrets)]
        return {"regret": trace[-1][1], "wall_s": trace[-1][0], "epochs": len(trace), "trace": trace}

    runs = {arm: [run([0.05, 0.03, 0.01 + seed / 1000]) for seed in range(6)] for arm in ("search", "random_asha")}
    at_k = summarise(runs)
    assert at_k["anytime_epochs"] == [1, 2, 3]
    curves = at_k["arms"]["search"]["anytime_iqm_pt"]
    assert curves["epochs"]["iqm"][:2] == pytest.approx([5.0, 3.0]) and len(curves["wall"]["iqm"]) == 41
    result = {"space": "s", "epoch_budget": 3, "trials": 3, "seeds": 6, "concurrency": {"2": at_k}}
    plot_anytime(result, "2", "search", tmp_path / "both.png")
    del at_k["anytime_epochs"]  # results from before the epochs axis: the seconds panel alone
    plot_anytime(result, "2", "search", tmp_path / "one.png")
    widths = [matplotlib.image.imread(tmp_path / name).shape[1] for name in ("both.png", "one.png")]
    assert widths[0] == 2 * widths[1]


def test_the_pays_table_marks_holm_verdicts_and_the_searchs_place():
    from benchmarks.readme_figures import pays_table

    def table(search, other, lower, higher, epochs):
        within = {"0.5": {"search": {"median_epochs": epochs}, "peer": {"median_epochs": None}}}
        return {
            "regret_iqm_pt": {"search": search, "peer": other},
            "p_search_lower_holm": {"peer": lower},
            "p_search_higher_holm": {"peer": higher},
            "to_within_pt": within,
        }

    stats = {
        "concurrency": {
            "2": {"tables": {"spaces.heldout.a": table(1.0, 2.0, 0.01, 1.0, 30.0)}},
            "4": {"tables": {"spaces.heldout.a": table(2.0, 1.0, 1.0, 0.01, None)}},
        }
    }
    lines = pays_table(stats).splitlines()
    assert lines[0] == "| method (2 / 4 side by side) | `a`: regret | `a`: epochs to 0.5 pt |"
    assert lines[2] == "| **the search** (default then) | 1.00 / 2.00 | 30 / never |"
    assert lines[3] == "| `peer` | 2.00* / 1.00! | never / never |"
    assert lines[4] == "| the search's place | 1 of 2 / 2 of 2 |  |"
    said = "After Holm, the search's final regret is lower than peer (1 of 2); it is higher than peer (1 of 2)."
    assert lines[6] == said


def test_the_pays_table_reads_a_pairs_verdict_its_results_and_the_searchs_pairs_alone(tmp_path):
    from benchmarks.readme_figures import pays_table

    def arm(regret, epochs):
        return {"regret_iqm_pt": regret, "to_within_pt": {"0.5": {"median_epochs": epochs}}}

    at_2 = {"search": arm(9.0, 90.0), "search|asha=promote": arm(9.0, 90.0), "peer": arm(9.0, 90.0)}
    at_4 = {"search": arm(1.0, 30.0), "search|asha=promote": arm(0.5, 20.0), "peer": arm(2.0, None)}
    result = {"concurrency": {"2": {"arms": at_2}, "4": {"arms": at_4}}}  # the key names the concurrency read
    (tmp_path / "a.json").write_text(json.dumps(result))
    pairs = {  # the promotion variant's pairs mark nothing: the marks are the search's own pairs
        "search|asha=promote>peer": {"p_first_lower_holm": 0.001, "p_first_higher_holm": 1.0},
        "search>peer": {"p_first_lower_holm": 0.5, "p_first_higher_holm": 0.01},
        "search|asha=promote>search": {"p_first_lower_holm": 0.001, "p_first_higher_holm": 1.0},
    }
    found = {"result": str(tmp_path / "a.json"), "space": "spaces.heldout.a", "pairs": pairs}
    for several in (True, False):  # a family of several concurrencies names each in its results' keys
        where = "spaces.heldout.a other" + (", 4 side by side" if several else "")
        lines = pays_table({"concurrency": [4] if several else 4, "results": {where: found}}).splitlines()
        assert lines[0] == "| method (4 side by side) | `a`: regret | `a`: epochs to 0.5 pt |"
        assert lines[2:6] == [
            "| **the search** (default then) | 1.00 | 30 |",
            "| the search, `asha=promote` | 0.50 | 20 |",
            "| `peer` | 2.00! | never |",
            "| the search's place | 2 of 3 |  |",
        ]
        assert (
            lines[7] == "After Holm, the search's final regret is lower than no arm; it is higher than peer (1 of 1)."
        )
        # about the default since asha=promote became it: its own pairs mark the rows, the search's stop mattering not
        lines = pays_table({"concurrency": [4] if several else 4, "results": {where: found}}, "search|asha=promote")
        assert lines.splitlines()[2:6] == [
            "| `asha=stop` (default then) | 1.00* | 30 |",
            "| **the default** (`asha=promote`) | 0.50 | 20 |",
            "| `peer` | 2.00* | never |",
            "| the default's place | 1 of 3 |  |",
        ]
        said = "After Holm, the default's final regret is lower than peer (1 of 1), `asha=stop` (default then) (1 of 1)"
        assert lines.splitlines()[7] == said + "; it is higher than no arm."


def test_ranks_friedman_and_the_groups_of_a_critical_difference_diagram():
    from benchmarks.statistics import average_ranks, cliques, friedman, pairwise_holm

    rng = np.random.default_rng(0)
    scores = np.stack([rng.normal(m, 0.1, 200) for m in (0.0, 0.02, 1.0)], axis=1)  # a ~ b, both ahead of c
    names = ["a", "b", "c"]
    ranks = average_ranks(scores, names)
    assert ranks["c"] == pytest.approx(3.0) and ranks["a"] + ranks["b"] == pytest.approx(3.0)
    assert friedman(scores) < 1e-10
    adjusted = pairwise_holm(scores, names)
    assert adjusted[("a", "c")] < 1e-10 and adjusted[("b", "c")] < 1e-10
    groups = cliques(ranks, adjusted)
    assert groups in ([["a", "b"]], [["b", "a"]])  # c stands alone: no bar
    assert cliques({"x": 1.0, "y": 2.0}, {("x", "y"): 0.5}) == [["x", "y"]]


def stats_result(space: str, offset: int, random_search: bool = True) -> dict:
    """A replay_cli result of one table with 60 seeds: the search lowest, random + ASHA next, random search last."""
    rng = np.random.default_rng(offset)
    arms = {
        "search": {"final_regret_pt": list(rng.uniform(0.0, 1.0, 60))},
        "random_asha": {"final_regret_pt": list(rng.uniform(1.0, 2.0, 60)), "median_wall_s": 10.0},
        "random": {"final_regret_pt": list(rng.uniform(1.0, 3.0, 60))},
    }
    if not random_search:
        del arms["random"]
    arms["search"].update(anytime_quartiles_pt=[[2.0, 1.0, 0.5]] * 3)
    at_k = {"arms": arms, "anytime_wall_s": [0.0, 5.0, 10.0]}
    return {"space": space, "table": space, "trials": 8, "epoch_budget": 0, "seeds": 60, "concurrency": {"2": at_k}}


def test_normalised_regret_is_random_searchs_median_and_the_comparison_spans_the_tables():
    from benchmarks.replay_stats import compare, normalised

    one = stats_result("one", 1)
    assert np.median(normalised(one["concurrency"]["2"]["arms"])["random"]) == pytest.approx(1.0)
    figures = compare([one, stats_result("two", 2)], "2")
    assert figures["tables"]["one"]["normalised_by"] == "random"
    assert figures["blocks"] == 120 and figures["mean_rank"]["search"] == pytest.approx(1.0)
    assert figures["tables"]["one"]["p_search_lower_holm"]["random_asha"] < 1e-6
    assert figures["tables"]["one"]["search_reaches_random_asha_final_at_share_of_random_asha_wall"] == 0.5
    met = {"below_random_asha": True, "none_ahead": True, "reaches_in_60pct": True}
    assert figures["tables"]["one"]["target"] == met
    assert figures["tables"]["one"]["effect_vs_search"]["random_asha"]["rank_biserial"] == pytest.approx(1.0)
    assert figures["by_table"]["ranks"]["two"] == {"search": 1.0, "random_asha": 2.0, "random": 3.0}
    assert figures["by_table"]["friedman_p"] is None  # two tables: no test over tables
    assert figures["targets"] == {"ahead_of_random_asha_on": ["one", "two"], "behind_on": {}, "met": True}


def test_a_family_without_random_search_compares_in_points_and_two_arms_get_no_friedman_p(tmp_path):
    """Regret is not scaled without random search; a table's own tests come out as with it (ranks within a table)."""
    from benchmarks.replay_stats import compare
    from benchmarks.statistics import plot_critical_difference

    scaled = compare([stats_result("one", 1), stats_result("two", 2)], "2")["tables"]["one"]
    two_arms = compare([stats_result("one", 1, False), stats_result("two", 2, False)], "2")
    points = two_arms["tables"]["one"]
    assert points["normalised_by"] == "points"
    assert points["regret_iqm_pt"]["search"] == points["normalised_iqm"]["search"]
    assert points["p_search_lower"]["random_asha"] == scaled["p_search_lower"]["random_asha"]
    assert two_arms["friedman_p"] is None and two_arms["pairs_holm"]["search vs random_asha"] < 1e-6
    plot_critical_difference(two_arms, "search", tmp_path / "two.png")  # its title says no Friedman p
    assert (tmp_path / "two.png").stat().st_size > 0


def test_the_rank_biserial_effect_size():
    from benchmarks.statistics import rank_biserial

    assert rank_biserial([1, 2, 3], [2, 3, 4]) == 1.0 and rank_biserial([2, 3, 4], [1, 2, 3]) == -1.0
    assert rank_biserial([0, 0, 0, 0], [1, -2, 3, 0]) == pytest.approx((1 + 3 - 2) / 6)
    assert rank_biserial([1, 1], [1, 1]) == 0.0


def test_a_variant_of_the_search_replays_other_settings_and_a_bad_one_is_named():
    from benchmarks.replay import _table, search_asha, table_space
    from benchmarks.replay_arms import parse_variant

    assert parse_variant("search|reduction=2|grace=2") == ("search", {"reduction": "2", "grace": "2"})
    assert parse_variant("search|tpe=optuna") == ("search", {"tpe": "optuna"})
    assert parse_variant("search|late=2") == ("search", {"late": "2"})
    assert parse_variant("search|late=1") == ("search", {"late": "1"})
    for bad in (
        "search|foo=1",
        "optuna_tpe_sh|grace=2",
        "search|grace",
        "nothing",
        "search|tpe=other",
        "search|late=",
    ) + ("search|late=10", "search|late=-1"):
        with pytest.raises(ValueError, match="KEY=VALUE"):
            parse_variant(bad)
    space = table_space(_table("benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz"))
    assert search_asha(space, 9, {"grace": "2", "reduction": "2"}).reduction == 2
    table = "benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz"
    assert replay_cli((table, "search|budget=8", 0, 8, 2))["epochs"] == 24  # the budget is spent, trials lifted


def test_tuning_and_evidence_seeds_are_disjoint_and_named_in_the_results():
    from benchmarks.replay_cli import SEED_SETS, measure

    sets = [set(seeds) for seeds in SEED_SETS.values()]
    assert len(sets) == 4 and sum(map(len, sets)) == len(set().union(*sets))  # tuning, evidence, fresh, heldout
    table = "benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz"
    figures = measure(table, 4, 24, [2], 1, 24, 2000, ("search", "random_asha", "random"))
    assert figures["seed_set"] == "other" and figures["first_seed"] == 2000
    assert figures["tuning_seeds"] == "100-399" and figures["evidence_seeds"] == "2000-2299"
    assert figures["fresh_seeds"] == "5000-5299" and figures["heldout_seeds"] == "7000-7299"


def parsed_lines(path) -> list[dict]:
    lines = []
    for line in path.read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            pass
    return lines


def test_replays_kept_as_they_come_are_not_replayed_again_and_read_back_alike(tmp_path, monkeypatch):
    """A replay stopped part way goes on where it stopped: what it kept is taken as kept (a result altered in the file
    comes back altered), a line a kill cut short is left out, the rest is replayed and kept too, and a kept result
    reads back as a fresh one. Kept under other cores, or by a tree with changes, nothing is taken."""
    from benchmarks import replay_cli as cli

    monkeypatch.setattr(cli, "code_state", lambda: {"code": "c0ffee", "code_dirty": False})
    table, keep = "benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz", tmp_path / "out.json.replays.jsonl"
    work = [(table, "random", seed, 24, 2, 24) for seed in (2000, 2001, 2002, 2003)]
    cli.replayed_keeping(work[:2], 1, keep)
    first, second = keep.read_text().splitlines()
    altered = json.loads(first)
    altered["result"]["regret"] = 9.0
    keep.write_text(f"{json.dumps(altered)}\n{second}\n{second[:40]}")  # the last line cut short by a kill
    again = cli.replayed_keeping(work, 1, keep)
    assert again[0]["regret"] == 9.0 and len(parsed_lines(keep)) == 4
    fresh = cli.replayed_keeping(work[1:], 1, None)
    assert json.loads(json.dumps(again[1:])) == json.loads(json.dumps(fresh))  # the traces' pairs as JSON lists
    monkeypatch.setattr(cli, "CORES", 4)
    assert cli.replayed_keeping(work[:1], 1, keep)[0]["regret"] != 9.0
    monkeypatch.setattr(cli, "CORES", 2)
    monkeypatch.setattr(cli, "code_state", lambda: {"code": "c0ffee", "code_dirty": True})
    assert cli.replayed_keeping(work[:1], 1, keep)[0]["regret"] != 9.0


def test_the_replays_default_stop_rule_is_the_products(tmp_path):
    """The replay's stop rule is what `python -m search run` reads from the same keys, the defaults included."""
    from benchmarks.replay_cli import arm_stop_rule, product_stop_rule
    from search.commands import parse_run

    for trials, epoch_budget in ((None, None), (8, None), (None, 30), (5, 30), (None, 4)):
        given = [f"trials={trials}"] * bool(trials) + [f"epoch_budget={epoch_budget}"] * bool(epoch_budget)
        config, _ = parse_run(["space=mlp_mnist", "epochs=9", f"storage={tmp_path}", *given])
        assert product_stop_rule(9, trials, epoch_budget) == (config.trials, config.epoch_budget), given
    assert arm_stop_rule({"trials": "12"}, 3, 24, 24) == (12, 0)
    assert arm_stop_rule({"epoch_budget": "40"}, 3, 8, 0) == (40, 40)


def test_the_values_coding_proposes_the_choices_themselves():
    from benchmarks.replay import _table, table_space
    from benchmarks.replay_arms import make_arm

    space = table_space(_table("benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz"))
    for coding in ("values", "ordered"):
        arm = make_arm(f"search|coding={coding}", space, 0, 8, 3)
        config = arm.propose("0")
        assert config["batch_size"] in space.hyperparameters["batch_size"].choices
        held = arm.searcher.record.study.trials[0].params["batch_size"]
        assert (held == config["batch_size"]) == (coding == "values")


def test_the_search_arm_is_the_products_sampler_values_held_numbers_modelled_in_order():
    """The `search` arm holds the values that train, as the product's study does, and proposes what TPE over the
    choices' positions proposes (search.running.proposals.sampler.OrderedTPESampler); the unordered values propose
    otherwise."""
    from benchmarks.replay import _table, table_space
    from benchmarks.replay_arms import make_arm

    space = table_space(_table("benchmarks/results/tables/cnn_mnist-9ep-4seeds.jsonl.gz"))

    def proposals(arm_name: str) -> list[dict]:
        arm, configs = make_arm(arm_name, space, 7, 12, 9), []
        for number in range(12):
            configs.append(arm.propose(str(number)))
            score = zlib.crc32(repr(sorted(configs[-1].items())).encode()) % 1000 / 1000
            arm.tell(str(number), 1, score)
            arm.end(str(number), completed=True)
        return configs

    product, positions, values = (
        proposals("search"),
        proposals("search|coding=ordered"),
        proposals("search|coding=values"),
    )
    assert product == positions and product != values
    held = make_arm("search", space, 7, 12, 9)
    config = held.propose("0")
    assert held.searcher.record.study.trials[0].params["batch_size"] == config["batch_size"]


def test_the_concurrency_variant_grows_the_random_start_and_the_late_rule_reaches_the_proposals():
    from benchmarks.replay import _table, table_space
    from benchmarks.replay_arms import make_arm
    from search.running.proposals.late_random import LateRandomShare

    space = table_space(_table("benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz"))
    product, grown = make_arm("search", space, 0, 12, 3, 4), make_arm("search|grow=1", space, 0, 12, 3, 4)
    sampler = lambda arm: getattr(arm.searcher.record.study.sampler, "model", arm.searcher.record.study.sampler)  # noqa: E731
    assert sampler(product)._constant_liar and sampler(product)._n_startup_trials == 3  # Optuna 5's default: on
    assert sampler(grown)._n_startup_trials == 3 + 4 - 1  # one more for each trial side by side beyond the first
    share = lambda arm: arm.searcher.record.study.sampler  # noqa: E731 - run's random share past trial 36, or none
    assert isinstance(share(product), LateRandomShare) and isinstance(share(grown), LateRandomShare)
    before = make_arm("search|late=2", space, 0, 12, 3, 4)  # run's default before: every 2nd proposal past trial 36
    assert share(product).every == 1 and share(before).every == 2  # run's: every proposal past trial 36
    assert not isinstance(share(make_arm("search|late=0", space, 0, 12, 3, 4)), LateRandomShare)
    assert not isinstance(share(make_arm("search|tpe=optuna", space, 0, 12, 3, 4)), LateRandomShare)
    assert not isinstance(share(make_arm("search|tpe=optuna|coding=values", space, 0, 12, 3, 4)), LateRandomShare)
    assert isinstance(share(make_arm("search|coding=values", space, 0, 12, 3, 4)), LateRandomShare)
    assert not isinstance(share(make_arm("search|coding=values|late=0", space, 0, 12, 3, 4)), LateRandomShare)
    assert not isinstance(share(make_arm("random_asha", space, 0, 12, 3, 4)), LateRandomShare)
    for bad in ("search|late=2|tpe=optuna", "random_asha|late=2"):
        with pytest.raises(ValueError, match="KEY=VALUE"):
            make_arm(bad, space, 0, 12, 3)
    with pytest.raises(ValueError, match="KEY=VALUE"):
        make_arm("search|liar=0", space, 0, 12, 3)  # retired (benchmarks/HISTORY.md, "Retired studies")


def test_the_anytime_figure_of_a_space_named_by_its_path_is_named_by_the_files_stem():
    from benchmarks.statistics import anytime_figure

    assert anytime_figure("spaces/heldout/glyphs_cnn.py", "2") == "anytime-glyphs_cnn-2.png"
    assert anytime_figure("spaces.heldout.digits_cnn", "4") == "anytime-spaces.heldout.digits_cnn-4.png"
    assert anytime_figure("mlp_mnist", "1") == "anytime-mlp_mnist-1.png"


@pytest.mark.parametrize("peer", ["peer_dehb", "peer_smac", "peer_synetune_bohb", "peer_priorband"])
def test_a_peer_replays_under_an_epoch_budget_with_its_version_named(peer):
    """Run where the peers are installed (pip install -e ".[peers]"); skipped elsewhere, so the suite's time holds."""
    from benchmarks.replay_peers import PEERS, versions

    pytest.importorskip({"peer_dehb": "dehb", "peer_smac": "smac", "peer_synetune_bohb": "syne_tune"}.get(peer, "neps"))
    run = replay_cli(("benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz", peer, 1, 24, 2, 24))
    assert run["epochs"] == 24 and 0 <= run["regret"] < 0.5
    assert replay_cli(("benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz", peer, 1, 24, 2, 24)) == run  # its seed's
    assert versions()[PEERS[peer]][0].isdigit()


def test_a_peers_configuration_comes_back_in_the_spaces_types_and_a_missing_peer_is_named():
    from benchmarks.replay_arms import parse_variant
    from benchmarks.replay_peers import back, installed

    config = back(SPACE, {"lr": "0.001", "hidden": "256", "layers": 2.0, "dropout": 0.25, "batch_size": "64"})
    assert config == {"lr": 0.001, "hidden": 256, "layers": 2, "dropout": 0.25, "batch_size": 64}
    assert type(config["hidden"]) is int and type(config["layers"]) is int
    assert parse_variant("peer_priorband") == ("peer_priorband", {})
    assert installed("no-such-peer-distribution") == "not installed"


def test_the_grid_as_choices_is_a_finite_space_whose_configurations_the_search_runs_once_each():
    from benchmarks.replay import _table, table_space
    from benchmarks.replay_arms import make_arm
    from benchmarks.replay_cli import summarise

    table = _table("benchmarks/results/tables/cnn_mnist-9ep-4seeds.jsonl.gz")  # 48 grid points
    space = table_space(table, as_choices=True)
    assert all(list(space.hyperparameters[name].choices) == values for name, values in table.grid.items())
    assert table_space(table).hyperparameters["lr"].log  # the product's range, as the registered families replay it

    def keys(arm: str) -> list:
        run = replay_search(table, space, make_arm(arm, space, 3, 30, table.epochs, 2), 3, 30, 2)
        return [trial["key"] for _, trial in sorted(run["trials"].items(), key=lambda item: int(item[0]))]

    assert len(set(keys("search|space=choices"))) == 30  # 30 trials, 30 configurations
    assert len(set(keys("search|space=choices|once=0"))) < 30  # the same sampler without the rule runs some twice
    with pytest.raises(ValueError, match="KEY=VALUE"):
        make_arm("search|once=1", space, 0, 12, 3)
    path = "benchmarks/results/tables/cnn_mnist-9ep-4seeds.jsonl.gz"
    arms = ("search|space=choices", "random_asha|space=choices|once=0")
    runs = {arm: [replay_cli((path, arm, seed, 8, 2)) for seed in (0, 1)] for arm in arms}  # the CLI's path
    assert all(8 <= run["epochs"] <= 72 and run["regret"] >= 0 for replays in runs.values() for run in replays)
    summary = summarise(runs)["arms"]  # a family of variants alone: its first arm stands in for the search
    assert "p_search_lower" in summary[arms[1]] and "p_search_lower" not in summary[arms[0]]
    capped = [replay_cli((path, "search|space=choices", 0, trials, 2)) for trials in (60, 48)]  # 48 configurations
    assert capped[0] == capped[1]  # as the product's stop rule: no more trials than the space holds
    assert replay_cli((path, arms[1], 0, 60, 2))["epochs"] > replay_cli((path, arms[1], 0, 48, 2))["epochs"]


def test_the_promotion_variant_pauses_every_trial_at_a_rung_and_resumes_the_top_third_where_it_paused(table):
    from benchmarks.replay import _table, table_space
    from benchmarks.replay_arms import PromotingArm, make_arm, parse_variant, rungs_of

    space = table_space(_table("benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz"))
    assert rungs_of(space, 9) == [2, 6, 9] and rungs_of(space, 3) == [1, 3]  # the rungs a trial pauses at
    assert rungs_of(space, 9, reduction=2) == [2, 4, 8, 9] and rungs_of(space, 9, grace=3) == [3, 9]

    class Given(PromotingArm):
        def ask(self) -> dict:
            return given.pop(0)

    # A, B, C pause at the rung (epoch 1: 0.5, 0.9, 0.1); with three there the top third (B) resumes at epoch 2
    # and finishes; A and C stay paused, as none other is in the top third; stopping ASHA trains A to the end too
    given = [A, B, C]
    run = replay_search(table, SPACE, Given(SPACE, 0, 3, 3), 0, 3)
    assert {trial_id: [row["epoch"] for row in trial["rows"]] for trial_id, trial in run["trials"].items()} == {
        "0": [1],
        "1": [1, 2, 3],
        "2": [1],
    }
    assert run["epochs"] == 5 and replay(table, [A, B, C], seed=0)[0] == [3, 3, 1]
    assert parse_variant("search|asha=promote") == ("search", {"asha": "promote"})
    assert parse_variant("search|reduction=2") == ("search", {"reduction": "2"})  # Tune's ASHA, as before
    tpe = {"asha": "promote", "startup": "2", "gamma": "0.05", "reduction": "2"}  # settings under the variant
    assert parse_variant("search|asha=promote|startup=2|gamma=0.05|reduction=2") == ("search", tpe)
    for bad in ("search|asha=promote|trials=2", "search|asha=stop", "random_asha|asha=promote") + (
        "search|gamma=0.05",  # TPE's settings only where the variant's arm reads them
        "search|asha=promote|tpe=optuna",  # the variant's TPE is the search's
        "random_asha|grace=2|asha=promote",
        "search|asha=promote|gamma=0.3",
        "search|asha=promote|known=0",
        "search|asha=promote|known=1",  # retired, as qmc=all (benchmarks/HISTORY.md, "Retired studies")
        "search|asha=promote|qmc=all",
        "search|asha=promote|reduction=1",  # rungs that never grow: refused, not a replay that hangs
        "search|asha=promote|reduction=1.5",
        "search|grace=-1",
    ):
        with pytest.raises(ValueError, match="KEY=VALUE"):
            parse_variant(bad)
    path = "benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz"
    again = replay_cli((path, "search|asha=promote", 1, 48, 2, 48))
    assert again["epochs"] == 48 and 0 <= again["regret"] < 0.5
    halves = make_arm("search|asha=promote|reduction=2", space, 0, 36, 9)  # rungs at 2, 4 and 8: half goes on
    for trial_id, value in zip("0123", (0.1, 0.6, 0.3, 0.5)):
        halves.trials[trial_id] = {"config": {}, "values": {}, "state": None}
        halves.tell(trial_id, 2, value)
    assert [halves.promoted() for _ in range(3)] == ["1", "3", None]
    for variant in ("startup=2", "gamma=0.05", "grace=2", "reduction=2"):  # each reaches the replay
        assert replay_cli((path, f"search|asha=promote|{variant}", 1, 48, 2, 48))["trace"] != again["trace"]


@pytest.mark.parametrize("epochs", [3, 6, 9, 20])
def test_the_replayed_default_is_runs_rungs_random_start_and_good_group(tmp_path, epochs):
    """RUNGS replays what `run` sets up for one objective under asha=promote on a table without an lr warm-up (the
    held-out tables): the rungs `parse_run` resolves, the random start and TPE's good group `open_search_study`
    records; `search|asha=promote` alone, what `run` set up before (rungs from epoch 2 in long trials, a third on)."""
    from benchmarks.families import RUNGS
    from benchmarks.replay_arms import make_arm
    from search.commands import parse_run
    from search.running.proposals.study_setup import open_search_study
    from search.running.study.queries import GOOD_SHARE_ATTR, STARTUP_ATTR
    from trainables.foundation.schedules import rung_milestones
    from trainables.foundation.storage import Experiment

    words = ["space=mlp_mnist", f"epochs={epochs}", "trials=40", "lr_schedule=none", f"storage={tmp_path}", "name=e"]
    config, space = parse_run(words)
    trained = dataclasses.replace(space, constants=config.constants(space))  # as a table's rows trained
    arm, before = (make_arm(arm, trained, 0, 40, epochs) for arm in (RUNGS, "search|asha=promote"))
    assert config.asha == "promote" and sorted(arm.rungs) == rung_milestones(epochs, config.grace, config.reduction)
    assert sorted(before.rungs) == rung_milestones(epochs, 2 if epochs >= 6 else 1, 3)
    (tmp_path / "e").mkdir()
    study = open_search_study(config, space, Experiment.at(str(tmp_path / "e"))).study
    model = arm.sampler.model
    assert model._n_startup_trials == study.user_attrs[STARTUP_ATTR] == study.sampler.model._n_startup_trials == 4
    assert [model._gamma(n) for n in (20, 100, 600)] == [study.sampler.model._gamma(n) for n in (20, 100, 600)]
    assert study.user_attrs[GOOD_SHARE_ATTR] == 0.05 and before.sampler.model._gamma is None


def test_the_promotion_variant_resumes_the_top_rung_first_once_each_and_shows_tpe_each_trial_as_it_stands(
    monkeypatch,
):
    import optuna

    from benchmarks.replay import _table, table_space
    from benchmarks.replay_arms import make_arm

    space = table_space(_table("benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz"))
    arm = make_arm("search|asha=promote", space, 0, 36, 9)  # rungs at epochs 2 and 6 (of 9)
    for trial_id, value in zip("012345", (0.1, 0.6, 0.3, 0.5, 0.2, 0.4)):
        arm.propose(trial_id)
        assert not arm.tell(trial_id, 1, value) and arm.tell(trial_id, 2, value)  # it pauses at the rung, not before
        arm.end(trial_id, completed=False)
    assert [arm.promoted(), arm.promoted(), arm.promoted()] == ["1", "3", None]  # the top third of six, once each
    for trial_id, value in (("1", 0.9), ("3", 0.7)):
        assert not any(arm.tell(trial_id, epoch, value) for epoch in (3, 4, 5)) and arm.tell(trial_id, 6, value)
        arm.end(trial_id, completed=False)

    def paused_at_rung_2(trial_id, value):
        arm.propose(trial_id)
        arm.tell(trial_id, 1, value), arm.tell(trial_id, 2, value)
        arm.end(trial_id, completed=False)

    paused_at_rung_2("6", 0.95)  # seven at rung 2: its top two are 6 and 1, and 6 waits
    assert arm.promoted() == "6"  # rung 6 holds two points: none in its top third yet
    assert not any(arm.tell("6", epoch, 0.5) for epoch in (3, 4, 5)) and arm.tell("6", 6, 0.5)
    arm.end("6", completed=False)
    paused_at_rung_2("7", 0.99)  # eight at rung 2: 7 waits there, and rung 6's best (1) waits above it
    assert [arm.promoted(), arm.promoted(), arm.promoted()] == ["1", "7", None]  # the top rung first
    for epoch, value in zip(range(7, 10), (0.8, 0.85, 0.88)):
        arm.tell("1", epoch, value)
    arm.end("1", completed=True)  # its epochs: 0.6, 0.6, then 0.9 to epoch 6, then 0.8, 0.85, 0.88 (no schedule)
    made = []
    real = optuna.create_study
    monkeypatch.setattr(optuna, "create_study", lambda **kw: made.append(real(**kw)) or made[-1])
    window = arm.sampler.model.window
    arm.propose("8")
    assert arm.sampler.model.window is not window  # TPE's window (past 250 trials) reads the states anew each ask
    trials = {t.number: t for t in made[-1].get_trials(deepcopy=False)}
    assert trials[1].state == optuna.trial.TrialState.COMPLETE and trials[1].value == 0.9  # the standing score
    assert trials[0].state == optuna.trial.TrialState.PRUNED and trials[0].intermediate_values == {1: 0.1, 2: 0.1}
    assert trials[7].state == optuna.trial.TrialState.RUNNING and max(trials[3].intermediate_values) == 6  # resumed


def test_a_replay_of_the_stopping_arms_is_as_it_was_before_paused_trials_could_resume():
    table = "benchmarks/results/tables/mlp_mnist-3ep.jsonl.gz"
    runs = {arm: replay_cli((table, arm, 3, 12, 2)) for arm in ("search", "random_asha")}
    assert {arm: (run["epochs"], round(run["regret"], 5)) for arm, run in runs.items()} == {
        "search": (20, 0.01625),  # as replay_search replayed them at d72d05d
        "random_asha": (28, 0.00575),
    }
