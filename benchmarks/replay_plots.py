"""The figures of a `replay_stats` comparison drawn as PNGs: anytime curves per table (normalised regret against the
replayed search's wall time, quartiles shaded) and Demsar's critical-difference diagram across tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np

OURS, RANDOM, RANDOM_ASHA = "search", "random", "random_asha"


def plot_anytime(result: dict, concurrency: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    at_k = result["concurrency"][concurrency]
    scale = float(np.median(at_k["arms"][RANDOM]["final_regret_pt"]))
    grid = np.asarray(at_k["anytime_wall_s"])
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for arm, f in at_k["arms"].items():
        low, median, high = (
            np.asarray([np.nan if v is None else v for v in q]) / scale for q in f["anytime_quartiles_pt"]
        )
        width = 2.4 if arm == OURS else 1.2
        (line,) = axes.plot(grid, median, label=arm, linewidth=width)
        if arm in (OURS, RANDOM_ASHA):
            axes.fill_between(grid, low, high, color=line.get_color(), alpha=0.15)
    axes.axhline(1.0, color="grey", linewidth=0.6, linestyle=":")
    axes.set(xlabel="wall time of the replayed search, s", ylabel="normalised regret (median; quartiles shaded)")
    axes.set_ylim(0, 3)
    rule = f"epoch_budget={result['epoch_budget']}" if result["epoch_budget"] else f"trials={result['trials']}"
    axes.set_title(f"{result['space']}: {rule}, {concurrency} side by side, {result['seeds']} seeds")
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def plot_critical_difference(figures: dict, path: Path) -> None:
    """Demsar's layout: the rank axis on top (best on the right), the better half of the arms labelled on the right,
    the rest on the left, a red bar under each group that no test tells apart."""
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
        label = f"{arm} ({ranks[arm]:.2f})"
        axes.text(
            edge,
            y,
            f" {label} " if right else f" {label} ",
            va="center",
            ha="left" if right else "right",
            fontsize=8,
            fontweight="bold" if arm == OURS else "normal",
        )
    tables = ", ".join(figures["tables"])
    axes.set_title(
        f"mean rank over {figures['blocks']} (table, seed) blocks of {tables}, {figures['concurrency']} side by side\n"
        f"Friedman p {figures['friedman_p']:.2g}; red: no difference (Wilcoxon, Holm, 0.05)",
        fontsize=8,
        pad=18,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
