"""Regret over many seeds, summarised the way the field reports search efficiency (Syne Tune: interquartile mean
with bootstrap intervals; Optuna's benchmarks: a one-sided Mann-Whitney U test): the replays' and hpo_tables'."""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

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


def summarise(arrays: dict[str, np.ndarray], budget: int, ours: str = "search", baseline: str = BASELINE) -> dict:
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


WITHIN_PT = (0.5, 0.2)  # time to quality: the incumbent within so many test-accuracy points of the table's best


def time_to_within(trace: list, points: float) -> tuple[int | None, float | None]:
    """(epochs spent, replayed seconds) when a search's incumbent first stands within `points` of the table's best;
    (None, None): never in that search. `trace`: (seconds, regret as a fraction) after each epoch, in order."""
    for epochs, (at, regret) in enumerate(trace, start=1):
        if regret * 100 <= points + 1e-9:
            return epochs, float(at)
    return None, None


def to_within(runs: list[dict]) -> dict:
    """Per threshold: each seed's epochs and seconds to within it (None: never), the share of seeds that got there,
    and the medians over seeds with never counted as endless (None where half the seeds or more never did)."""
    figures = {}
    for points in WITHIN_PT:
        hits = [time_to_within(run["trace"], points) for run in runs]
        epochs, seconds = ([h[i] for h in hits] for i in (0, 1))
        figures[f"{points:g}"] = {
            "reached": sum(e is not None for e in epochs) / len(epochs),
            "median_epochs": censored_median(epochs),
            "median_wall_s": censored_median(seconds),
            "epochs": epochs,
            "wall_s": [None if s is None else round(s, 2) for s in seconds],
        }
    return figures


def censored_median(values: list) -> float | None:
    """The median with None as endless: None where that median is endless."""
    median = float(np.median([np.inf if v is None else v for v in values]))
    return None if np.isinf(median) else median


def anytime_quartiles(runs: list[dict], grid: np.ndarray) -> list[list]:
    """The 25th, 50th and 75th percentiles over seeds of the incumbent's regret (points) at each time of `grid`; a
    search over by then keeps its final regret, one with no epoch ended yet has none (None where no seed has)."""
    at = np.full((len(runs), len(grid)), np.nan)
    for row, run in enumerate(runs):
        times = np.asarray([t for t, _ in run["trace"]])
        values = np.asarray([v for _, v in run["trace"]]) * 100
        index = np.searchsorted(times, grid, side="right") - 1
        at[row, index >= 0] = values[index[index >= 0]]
    quartiles = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns before any epoch ends
        for q in (25, 50, 75):
            column = np.nanpercentile(at, q, axis=0)
            quartiles.append([None if np.isnan(v) else round(float(v), 4) for v in column])
    return quartiles


def wall_share_to(runs: list[dict], target: float) -> float:
    """The median over seeds of the share of its own wall time a search took to reach `target` regret (1: never)."""
    shares = []
    for run in runs:
        reached = next((at for at, regret in run["trace"] if regret <= target + 1e-12), None)
        shares.append(1.0 if reached is None else reached / run["wall_s"])
    return float(np.median(shares))
