"""The replay's figures: every arm on many seeds at each budget (benchmarks.replay), summarised the way the field
reports search efficiency (Syne Tune: interquartile mean with bootstrap intervals; Optuna's benchmarks: a
one-sided Mann-Whitney U test).

    python -m benchmarks --only replay [--replay-table T] [--replay-seeds 500] [--replay-budgets 1,4]
        [--replay-first-seed 0] [--replay-checks 4]
"""

from __future__ import annotations

import multiprocessing

import numpy as np
from scipy import stats

from benchmarks import portable
from benchmarks.replay import ARMS, CurveTable, default_budget, exhaustive_regret, regret_trace, table_space

FRACTIONS = (0.25, 0.5, 1.0)
BASELINE = "random"  # the arm whose final median regret the search's arm must reach


def iqm(values) -> float:
    """Interquartile mean: the mean of the middle half."""
    return float(stats.trim_mean(np.asarray(values, dtype=float), 0.25))


def bootstrap_interval(values, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile-bootstrap interval of the interquartile mean."""
    values = np.asarray(values, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(values), size=(resamples, len(values)))
    means = stats.trim_mean(values[picks], 0.25, axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def p_lower(a, b) -> float:
    """One-sided Mann-Whitney U p-value that `a`'s values tend to be lower than `b`'s (regret: better)."""
    return float(stats.mannwhitneyu(a, b, alternative="less").pvalue)


def epochs_to_reach(traces: np.ndarray, target: float) -> int | None:
    """The first epoch at which the median over seeds of `traces` ([seed, epoch]) is at or below `target`."""
    median = np.median(traces, axis=0)
    reached = np.flatnonzero(median <= target + 1e-12)
    return int(reached[0]) + 1 if reached.size else None


def measure(
    table_path: str, seeds: int, multiples: list[int], checks: int = 0, first_seed: int = 0, jobs: int = 2
) -> dict:
    """Every arm x seed (`first_seed` on) x budget, replayed (in `jobs` processes); the figures per budget; then
    `checks` real searches through Ray against their replays (benchmarks.replay_check)."""
    table = CurveTable.load(table_path)
    budgets = [default_budget(table.epochs) * multiple for multiple in multiples]
    replayed = range(first_seed, first_seed + seeds)
    work = [(table_path, arm, seed, budget) for budget in budgets for arm in ARMS for seed in replayed]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        traces = pool.map(regret_trace, work, chunksize=8)
    by_job = {(arm, budget): [] for _, arm, _, budget in work}
    for (_, arm, _, budget), trace in zip(work, traces):
        by_job[(arm, budget)].append(trace)
    figures = {
        "table": portable(table_path),
        "space": table.space,
        "configurations": len(table.val),
        "table_seeds": table.seeds,
        "best_mean_test_acc": table.best_mean_test(),
        "exhaustive_regret": exhaustive_regret(table, table_space(table)),
        "seeds": seeds,
        "first_seed": first_seed,
        "budgets": {},
    }
    for budget in budgets:
        arrays = {arm: np.asarray(by_job[(arm, budget)]) for arm in ARMS}
        figures["budgets"][str(budget)] = summarise(arrays, budget)
    if checks:
        from benchmarks.replay_check import check

        figures["ray_check"] = check(table_path, searches=checks)
    return figures


def summarise(arrays: dict[str, np.ndarray], budget: int, ours: str = ARMS[0], baseline: str = BASELINE) -> dict:
    """Per arm: regret at each fraction of the budget (IQM, 95% interval, median), the p-values of `ours` being
    lower (and higher) than each other arm's at the end, and the steps (epochs, trials) each arm needs to reach the
    baseline's final median regret."""
    ours_final = arrays[ours][:, -1]
    target = float(np.median(arrays[baseline][:, -1]))
    summary = {"baseline_final_median_regret": target, "arms": {}}
    for arm, traces in arrays.items():
        at = {}
        for fraction in FRACTIONS:
            column = traces[:, max(1, round(fraction * budget)) - 1]
            at[f"{fraction:g}"] = {
                "iqm": iqm(column),
                "interval": bootstrap_interval(column),
                "median": float(np.median(column)),
            }
        summary["arms"][arm] = {
            "regret": at,
            "p_search_lower": None if arm == ours else p_lower(ours_final, traces[:, -1]),
            "p_search_higher": None if arm == ours else p_lower(traces[:, -1], ours_final),
            "epochs_to_baseline_median": epochs_to_reach(traces, target),
        }
    return summary


def print_table(figures: dict) -> None:
    print(
        f"replay on {figures['space']}'s table ({figures['configurations']} configurations, seeds "
        f"{figures['table_seeds']}, best mean test_acc {figures['best_mean_test_acc']:.4f}), "
        f"{figures['seeds']} seeds per arm (from {figures.get('first_seed', 0)}); "
        "regret in test_acc points x100, IQM [95% interval]"
    )
    if "exhaustive_regret" in figures:
        print(f"floor: every configuration trained, chosen by validation: {100 * figures['exhaustive_regret']:.2f}")
    for budget, summary in figures["budgets"].items():
        target = 100 * summary["baseline_final_median_regret"]
        print(f"budget {budget} epochs (baseline {BASELINE}: final median {target:.2f})")
        print("| arm | 25% | 50% | 100% | p (search lower) | p (search higher) | epochs to baseline median |")
        print("|---|---|---|---|---|---|---|")
        for arm, row in summary["arms"].items():
            cells = [
                f"{100 * r['iqm']:.2f} [{100 * r['interval'][0]:.2f}, {100 * r['interval'][1]:.2f}]"
                for r in row["regret"].values()
            ]
            p = " | ".join("-" if row[k] is None else f"{row[k]:.3g}" for k in ("p_search_lower", "p_search_higher"))
            reach = row["epochs_to_baseline_median"]
            print(f"| {arm} | {' | '.join(cells)} | {p} | {reach if reach else f'> {budget}'} |")
    if "ray_check" in figures:
        runs = figures["ray_check"]["searches"]
        same = sum(run["match"] for run in runs)
        print(f"ASHA through Ray: {same} of {len(runs)} real searches stopped every trial where the replay did")
