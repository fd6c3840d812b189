"""The statistics the benchmarks compare optimizers with (numpy, scipy): regret's IQM and bootstrap intervals, Wilcoxon
signed-rank paired by seed, Holm, average ranks with Friedman's test and a critical-difference diagram's groups
(pairwise Wilcoxon + Holm, Benavoli et al. 2016); the diagram and the anytime curves drawn from them."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import numpy as np
from scipy import stats


def wilcoxon(a, b, alternative: str) -> float:
    """Wilcoxon signed-rank p-value of `a` against `b`, paired (1 where every pair is tied)."""
    if np.all(np.asarray(a) == np.asarray(b)):
        return 1.0
    return float(stats.wilcoxon(a, b, alternative=alternative).pvalue)


def rank_biserial(a, b) -> float:
    """The matched-pairs rank-biserial correlation of `a` against `b` (Kerby 2014), in [-1, 1] (1: `a` lower in
    every pair); ties left out."""
    difference = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    difference = difference[difference != 0]
    if not difference.size:
        return 0.0
    ranks = stats.rankdata(np.abs(difference))
    return float((ranks[difference > 0].sum() - ranks[difference < 0].sum()) / ranks.sum())


def holm(p_values: dict) -> dict:
    """Holm's step-down adjustment of a family of p-values."""
    ordered, adjusted, running = sorted(p_values.items(), key=lambda item: item[1]), {}, 0.0
    for index, (name, p) in enumerate(ordered):
        running = max(running, min(1.0, (len(ordered) - index) * p))
        adjusted[name] = running
    return adjusted


def average_ranks(scores: np.ndarray, names: list[str]) -> dict[str, float]:
    """Each column's mean rank over the rows of `scores` ([block, arm], lower is better; ties share their mean)."""
    ranks = np.array([stats.rankdata(row) for row in scores])
    return {name: float(ranks[:, i].mean()) for i, name in enumerate(names)}


def friedman(scores: np.ndarray) -> float | None:
    """Friedman's p-value that every column of `scores` ([block, arm]) ranks alike (None for two: Wilcoxon's pair)."""
    return float(stats.friedmanchisquare(*scores.T).pvalue) if scores.shape[1] > 2 else None


def pairwise_holm(scores: np.ndarray, names: list[str]) -> dict[tuple[str, str], float]:
    """Two-sided Wilcoxon of every pair of columns over the blocks, Holm-corrected as one family."""
    pairs = itertools.combinations(range(len(names)), 2)
    return holm({(names[i], names[j]): wilcoxon(scores[:, i], scores[:, j], "two-sided") for i, j in pairs})


def cliques(ranks: dict[str, float], adjusted: dict[tuple[str, str], float], alpha: float = 0.05) -> list[list[str]]:
    """The bars of a critical-difference diagram: maximal runs of arms (in rank order) no pair of which differs."""
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
    """`other` minus `ours` per seed in their own unit (above 0: ours lower): median and mean with 95% bootstrap
    intervals, and the Hodges-Lehmann shift."""
    difference = np.asarray(other, dtype=float) - np.asarray(ours, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(difference), size=(resamples, len(difference)))
    figures = {}
    for name, statistic in (("median", np.median), ("mean", np.mean)):
        resampled = statistic(difference[picks], axis=1)
        figures[name] = float(statistic(difference))
        figures[f"{name}_interval"] = [float(np.percentile(resampled, 2.5)), float(np.percentile(resampled, 97.5))]
    return {**figures, **hodges_lehmann(difference)}


def hodges_lehmann(difference, confidence: float = 0.95) -> dict:
    """The Hodges-Lehmann shift of paired differences (the median of their Walsh averages), with the interval that
    inverts the signed-rank test (Hollander & Wolfe, k from the normal approximation)."""
    d = np.asarray(difference, dtype=float)
    n = len(d)
    i, j = np.triu_indices(n)
    walsh, z = np.sort((d[i] + d[j]) / 2), stats.norm.ppf(0.5 + confidence / 2)
    k = int(np.floor(n * (n + 1) / 4 - z * np.sqrt(n * (n + 1) * (2 * n + 1) / 24))) - 1  # 0-based, outward
    k = min(max(k, 0), (len(walsh) - 1) // 2)
    interval = [float(walsh[k]), float(walsh[len(walsh) - 1 - k])]
    return {"hodges_lehmann": float(np.median(walsh)), "hodges_lehmann_interval": interval}


def median_ratio(ours: list, other: list, resamples: int = 2000, seed: int = 0) -> dict:
    """Ours over other of two medians over the same seeds (None: endless), with a 95% bootstrap interval resampling
    seeds in pairs; None where a median is endless."""
    a, b = (np.asarray([np.inf if v is None else v for v in values], dtype=float) for values in (ours, other))

    def ratio(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        top, bottom = np.median(x, axis=-1), np.median(y, axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(np.isfinite(top) & np.isfinite(bottom) & (bottom > 0), top / bottom, np.inf)

    picks = np.random.default_rng(seed).integers(0, len(a), size=(resamples, len(a)))
    low, high = np.percentile(ratio(a[picks], b[picks]), [2.5, 97.5], method="nearest")  # endless stays endless
    finite = lambda v: None if not np.isfinite(v) else float(v)  # noqa: E731 - endless: None
    return {"ratio": finite(float(ratio(a, b))), "interval": [finite(low), finite(high)]}


def iqm(values) -> float:
    """Interquartile mean: the mean of the middle half."""
    return float(stats.trim_mean(np.asarray(values, dtype=float), 0.25))


def bootstrap_interval(values, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% percentile-bootstrap interval of the interquartile mean."""
    values = np.asarray(values, dtype=float)
    picks = np.random.default_rng(seed).integers(0, len(values), size=(resamples, len(values)))
    means = stats.trim_mean(values[picks], 0.25, axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


WITHIN_PT = (0.5, 0.2)  # time to quality: the incumbent within so many test-accuracy points of the table's best


def time_to_within(trace: list, points: float) -> tuple[int | None, float | None]:
    """(epochs, seconds) when a search's incumbent first stands within `points` of the table's best (None: never);
    `trace`: (seconds, regret as a fraction) after each epoch."""
    for epochs, (at, regret) in enumerate(trace, start=1):
        if regret * 100 <= points + 1e-9:
            return epochs, float(at)
    return None, None


def to_within(runs: list[dict]) -> dict:
    """Per threshold: each seed's epochs and seconds to within it (None: never), the share that got there, and the
    medians over seeds (None where half the seeds or more never did)."""
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


def incumbent_at(runs: list[dict], grid: np.ndarray, by: str = "wall") -> np.ndarray:
    """Each seed's incumbent regret (points) at each point of `grid` (seconds or epochs); NaN before its first epoch."""
    at = np.full((len(runs), len(grid)), np.nan)
    for row, run in enumerate(runs):
        times = np.asarray([t for t, _ in run["trace"]]) if by == "wall" else np.arange(1, len(run["trace"]) + 1)
        values, index = np.asarray([v for _, v in run["trace"]]) * 100, np.searchsorted(times, grid, side="right") - 1
        at[row, index >= 0] = values[index[index >= 0]]
    return at


def anytime_quartiles(runs: list[dict], grid: np.ndarray) -> list[list]:
    """The quartiles over seeds of the incumbent's regret (points) at each time of `grid` (None before any epoch)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns before any epoch ends
        quartiles = np.nanpercentile(incumbent_at(runs, grid), [25, 50, 75], axis=0)
    return [[None if np.isnan(v) else round(float(v), 4) for v in row] for row in quartiles]


def anytime_iqm(runs: list[dict], grid: np.ndarray, by: str) -> dict:
    """The IQM over seeds of the incumbent's regret (points) at each point of `grid` and its 95% bootstrap band, over
    the seeds that have ended an epoch by then (None where fewer than half have)."""
    at, shown = incumbent_at(runs, grid, by), {"iqm": [], "low": [], "high": []}
    for column in at.T:
        values = column[~np.isnan(column)]
        figures = (iqm(values), *bootstrap_interval(values, 1000)) if 2 * len(values) >= len(column) else (None,) * 3
        for key, value in zip(shown, figures):
            shown[key].append(None if value is None else round(value, 4))
    return shown


def wall_share_to(runs: list[dict], target: float) -> float:
    """The median over seeds of the share of its own wall time a search took to reach `target` regret (1: never)."""
    shares = []
    for run in runs:
        reached = next((at for at, regret in run["trace"] if regret <= target + 1e-12), None)
        shares.append(1.0 if reached is None else reached / run["wall_s"])
    return float(np.median(shares))


def plot_critical_difference(figures: dict, ours: str, path: Path) -> None:
    """Demsar's layout: rank axis on top, best on the right, a red bar under each group no test separates; ours bold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranks, groups = figures["mean_rank"], figures["cliques"]
    order = sorted(ranks, key=ranks.get)
    low, high = np.floor(min(ranks.values()) * 2) / 2, np.ceil(max(ranks.values()) * 2) / 2
    half = (len(order) + 1) // 2
    rows = max(half, len(order) - half)
    figure, axes = plt.subplots(figsize=(8, 1.2 + 0.3 * (rows + len(groups))))
    axes.set_xlim(high + (high - low) * 0.45, low - (high - low) * 0.45)
    axes.set_ylim(-(len(groups) * 0.3 + rows * 0.35 + 0.4), 0.2)
    axes.set_xticks(np.arange(low, high + 0.01, 0.5))
    axes.xaxis.tick_top()
    axes.set_yticks([])
    for spine in ("left", "right", "bottom"):
        axes.spines[spine].set_visible(False)
    for index, group in enumerate(groups):
        y = -(index + 1) * 0.3
        axes.plot([ranks[group[0]] + 0.02, ranks[group[-1]] - 0.02], [y, y], color="red", linewidth=3)
    top = -(len(groups) * 0.3 + 0.35)
    for index, arm in enumerate(order):
        right = index < half
        y = top - 0.35 * (index if right else len(order) - 1 - index)
        edge = low - (high - low) * 0.05 if right else high + (high - low) * 0.05
        axes.plot([ranks[arm], ranks[arm], edge], [0, y, y], color="black", linewidth=0.8)
        label, weight = f"{arm} ({ranks[arm]:.2f})", "bold" if arm == ours else "normal"
        axes.text(edge, y, f" {label} ", va="center", ha="left" if right else "right", fontsize=8, fontweight=weight)
    tables, p = ", ".join(figures["tables"]), "-" if figures["friedman_p"] is None else f"{figures['friedman_p']:.2g}"
    top = f"mean rank over {figures['blocks']} (table, seed) blocks of {tables}, {figures['concurrency']} side by side"
    axes.set_title(f"{top}\nFriedman p {p}; red: no difference (Wilcoxon, Holm, 0.05)", fontsize=8, pad=18)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def anytime_figure(space: str, concurrency: str) -> str:
    """The anytime figure's file name; a space named by its file path, by the file's stem (slashes would be folders)."""
    label = Path(space).stem if space.endswith(".py") or "/" in space else space
    return f"anytime-{label}-{concurrency}.png"


def plot_anytime(result: dict, concurrency: str, ours: str, path: Path) -> None:
    """Each arm's regret (test-accuracy points) against epochs spent and against replayed seconds: its IQM over seeds
    with the 95% band shaded (results without IQM curves: the median, quartiles shaded); `ours` drawn bold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    at_k = result["concurrency"][concurrency]
    axes_of = (("epochs", "anytime_epochs", "epochs spent"), ("wall", "anytime_wall_s", "replayed seconds"))
    axes_of = [a for a in axes_of if a[1] in at_k]
    figure, panels = plt.subplots(1, len(axes_of), figsize=(6 * len(axes_of), 4.5), squeeze=False)
    band, iqm_curves = ("low", "iqm", "high"), "anytime_iqm_pt" in next(iter(at_k["arms"].values()))
    for axes, (by, grid_key, label) in zip(panels[0], axes_of):
        for arm, f in at_k["arms"].items():
            curves = [f["anytime_iqm_pt"][by][key] for key in band] if iqm_curves else f["anytime_quartiles_pt"]
            low, middle, high = (np.asarray([np.nan if v is None else v for v in c]) for c in curves)
            (line,) = axes.plot(at_k[grid_key], middle, label=arm, linewidth=2.4 if arm == ours else 1.1)
            axes.fill_between(at_k[grid_key], low, high, color=line.get_color(), alpha=0.12)
        if floor := result.get("exhaustive_floor_pt", {}).get("mean"):
            axes.axhline(floor, color="grey", linewidth=0.6, linestyle=":", label="exhaustive floor")
        shown = "IQM, 95% band" if iqm_curves else "median, quartiles"  # results from before the IQM curves
        axes.set_yscale("symlog", linthresh=0.1)  # regret 0 stays drawn
        axes.set(xlabel=label, ylabel=f"regret, test-accuracy points ({shown})", ylim=(0, None))
    rule = f"epoch_budget={result['epoch_budget']}" if result["epoch_budget"] else f"trials={result['trials']}"
    figure.suptitle(f"{result['space']}: {rule}, {concurrency} side by side, {result['seeds']} seeds", fontsize=10)
    panels[0][-1].legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
