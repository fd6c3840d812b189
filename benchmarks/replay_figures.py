"""Regret over many seeds, summarised the way the field reports search efficiency (Syne Tune: interquartile mean
with bootstrap intervals; Optuna's benchmarks: a one-sided Mann-Whitney U test): the replays' and hpo_tables'."""

from __future__ import annotations

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
