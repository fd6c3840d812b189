"""The tests the benchmarks compare optimizers with (pure: numpy and scipy): Wilcoxon signed-rank paired by seed, Holm's
step-down correction of a family, and average ranks with Friedman's test and the groups a critical-difference
diagram draws (Demsar 2006; pairwise Wilcoxon + Holm as Benavoli et al. 2016 recommend over Nemenyi)."""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats


def wilcoxon(a, b, alternative: str) -> float:
    """Wilcoxon signed-rank p-value of `a` against `b`, paired (1 where every pair is tied)."""
    if np.all(np.asarray(a) == np.asarray(b)):
        return 1.0
    return float(stats.wilcoxon(a, b, alternative=alternative).pvalue)


def rank_biserial(a, b) -> float:
    """The matched-pairs rank-biserial correlation of `a` against `b` (Kerby 2014): the share of the signed-rank sum
    where `a` is lower minus where it is higher, in [-1, 1] (1: `a` lower in every pair); ties left out."""
    difference = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    difference = difference[difference != 0]
    if not difference.size:
        return 0.0
    ranks = stats.rankdata(np.abs(difference))
    return float((ranks[difference > 0].sum() - ranks[difference < 0].sum()) / ranks.sum())


def holm(p_values: dict) -> dict:
    """Holm's step-down adjustment of a family of p-values."""
    ordered = sorted(p_values.items(), key=lambda item: item[1])
    adjusted, running = {}, 0.0
    for index, (name, p) in enumerate(ordered):
        running = max(running, min(1.0, (len(ordered) - index) * p))
        adjusted[name] = running
    return adjusted


def average_ranks(scores: np.ndarray, names: list[str]) -> dict[str, float]:
    """Each column's mean rank over the rows of `scores` ([block, arm], lower is better; ties share their mean)."""
    ranks = np.array([stats.rankdata(row) for row in scores])
    return {name: float(ranks[:, i].mean()) for i, name in enumerate(names)}


def friedman(scores: np.ndarray) -> float:
    """Friedman's p-value that every column of `scores` ([block, arm]) ranks alike."""
    return float(stats.friedmanchisquare(*scores.T).pvalue)


def pairwise_holm(scores: np.ndarray, names: list[str]) -> dict[tuple[str, str], float]:
    """Two-sided Wilcoxon of every pair of columns over the blocks, Holm-corrected as one family."""
    raw = {
        (names[i], names[j]): wilcoxon(scores[:, i], scores[:, j], "two-sided")
        for i, j in itertools.combinations(range(len(names)), 2)
    }
    return holm(raw)


def cliques(ranks: dict[str, float], adjusted: dict[tuple[str, str], float], alpha: float = 0.05) -> list[list[str]]:
    """The bars of a critical-difference diagram: maximal runs of arms (in rank order) no pair of which differs at
    `alpha`, each of two or more arms, none inside another."""
    order = sorted(ranks, key=ranks.get)

    def alike(a: str, b: str) -> bool:
        return adjusted.get((a, b), adjusted.get((b, a), 1.0)) >= alpha

    runs = []
    for start in range(len(order)):
        end = start
        while end + 1 < len(order) and all(alike(order[k], order[end + 1]) for k in range(start, end + 1)):
            end += 1
        if end > start and not any(s <= start and end <= e for s, e in runs):
            runs.append((start, end))
    return [order[s : e + 1] for s, e in runs]


def paired_effect(ours, other, resamples: int = 2000, seed: int = 0) -> dict:
    """The size of a paired difference in its own unit (test-accuracy points): `other` minus `ours` per seed (above
    0: ours lower), its median and mean, each with a 95% percentile-bootstrap interval over the seeds, and the
    Hodges-Lehmann shift, the estimate that goes with the Wilcoxon signed-rank test, with its interval."""
    difference = np.asarray(other, dtype=float) - np.asarray(ours, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(difference), size=(resamples, len(difference)))
    figures = {}
    for name, statistic in (("median", np.median), ("mean", np.mean)):
        resampled = statistic(difference[picks], axis=1)
        figures[name] = float(statistic(difference))
        figures[f"{name}_interval"] = [float(np.percentile(resampled, 2.5)), float(np.percentile(resampled, 97.5))]
    return {**figures, **hodges_lehmann(difference)}


def hodges_lehmann(difference, confidence: float = 0.95) -> dict:
    """The Hodges-Lehmann shift of paired differences: the median of their Walsh averages (every (d_i + d_j) / 2,
    i <= j), with the distribution-free interval that inverts the signed-rank test (Hollander & Wolfe: the k-th
    smallest and largest Walsh averages, k from the normal approximation of the signed-rank statistic)."""
    d = np.asarray(difference, dtype=float)
    n = len(d)
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    z = stats.norm.ppf(0.5 + confidence / 2)
    k = int(np.floor(n * (n + 1) / 4 - z * np.sqrt(n * (n + 1) * (2 * n + 1) / 24))) - 1  # 0-based, outward
    k = min(max(k, 0), (len(walsh) - 1) // 2)
    return {
        "hodges_lehmann": float(np.median(walsh)),
        "hodges_lehmann_interval": [float(walsh[k]), float(walsh[len(walsh) - 1 - k])],
    }


def median_ratio(ours: list, other: list, resamples: int = 2000, seed: int = 0) -> dict:
    """Ours over other of two medians over the same seeds, None counting as endless (a search that never got
    there), with a 95% bootstrap interval resampling seeds in pairs; None where a median is endless."""
    a, b = (np.asarray([np.inf if v is None else v for v in values], dtype=float) for values in (ours, other))

    def ratio(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        top, bottom = np.median(x, axis=-1), np.median(y, axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(np.isfinite(top) & np.isfinite(bottom) & (bottom > 0), top / bottom, np.inf)

    value = float(ratio(a, b))
    picks = np.random.default_rng(seed).integers(0, len(a), size=(resamples, len(a)))
    low, high = np.percentile(ratio(a[picks], b[picks]), [2.5, 97.5], method="nearest")  # endless stays endless
    finite = lambda v: None if not np.isfinite(v) else float(v)  # noqa: E731 - endless: None
    return {"ratio": finite(value), "interval": [finite(low), finite(high)]}
