"""The arms of `benchmarks.replay_cli` across learning-curve tables, as the field compares optimizers: normalised
regret (0: the table's best configuration, 1: random search's median final regret on that table, at the same stop
rule and trials side by side), per table a one-sided Wilcoxon test paired by seed with Holm over every table and
arm, across tables average ranks over (table, seed) blocks with Friedman's test and a critical-difference diagram
(pairwise Wilcoxon, Holm), and anytime curves; the share of random + ASHA's wall at which the search's median
reaches random + ASHA's final median.

    python -m benchmarks.replay_stats RESULTS.json RESULTS.json... [--concurrency 1,2,4] [--figures DIR] [--out F]

Writes `anytime-<space>-<k>.png` per table and `critical-difference-<k>.png` into DIR (k: trials side by side).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import rankdata

from benchmarks import portable
from benchmarks.replay_figures import iqm
from benchmarks.statistics import average_ranks, cliques, friedman, holm, pairwise_holm, rank_biserial, wilcoxon

OURS, RANDOM, RANDOM_ASHA = "search", "random", "random_asha"
ALPHA = 0.05


def normalised(arms: dict) -> dict[str, np.ndarray]:
    """Each arm's final regrets over random search's median final regret."""
    scale = float(np.median(arms[RANDOM]["final_regret_pt"]))
    return {arm: np.asarray(f["final_regret_pt"]) / scale for arm, f in arms.items()}


def effect(ours: np.ndarray, other: np.ndarray) -> dict:
    """The size of a difference on one table, paired by seed: the median of the arm's normalised regret minus the
    search's (above 0: the search lower), and the matched-pairs rank-biserial correlation (1: the search lower on
    every seed)."""
    return {"median_difference": float(np.median(other - ours)), "rank_biserial": rank_biserial(ours, other)}


def by_table(tables: dict, arms: list[str]) -> dict:
    """The table as the unit: each arm's rank on each table by its normalised regret IQM (1: best), their mean, and
    Friedman's p over the tables (seeds are repeats within a table, not independent workloads)."""
    iqms = np.array([[table["normalised_iqm"][arm] for arm in arms] for table in tables.values()])
    ranks = {name: dict(zip(arms, rankdata(row).tolist())) for name, row in zip(tables, iqms)}
    return {
        "ranks": ranks,
        "mean_rank": average_ranks(iqms, arms),
        "friedman_p": friedman(iqms) if len(tables) > 2 else None,
    }


def targets(tables: dict) -> dict:
    """The evidence issue's targets at the product's defaults: ahead of random + ASHA (Holm) on at least two tables,
    behind no alternative on any."""
    ahead = [name for name, table in tables.items() if table["target"]["below_random_asha"]]
    behind = {name: [arm for arm, p in t["p_search_higher_holm"].items() if p < ALPHA] for name, t in tables.items()}
    return {
        "ahead_of_random_asha_on": ahead,
        "behind_on": {name: arms for name, arms in behind.items() if arms},
        "met": len(ahead) >= min(2, len(tables)) and not any(behind.values()),
    }


def reach_share(at_k: dict) -> float | None:
    """The search's median regret reaches random + ASHA's final median at this share of random + ASHA's median
    wall (None: not within the grid)."""
    target = float(np.median(at_k["arms"][RANDOM_ASHA]["final_regret_pt"]))
    median = at_k["arms"][OURS]["anytime_quartiles_pt"][1]
    reached = [t for t, v in zip(at_k["anytime_wall_s"], median) if v is not None and v <= target + 1e-9]
    return reached[0] / at_k["arms"][RANDOM_ASHA]["median_wall_s"] if reached else None


def compare(results: list[dict], concurrency: str) -> dict:
    tables, blocks = {}, []
    raw_lower, raw_higher = {}, {}
    for result in results:
        at_k = result["concurrency"][concurrency]
        scores = normalised(at_k["arms"])
        name = result["space"]
        arms = list(scores)
        blocks.append(np.stack([scores[arm] for arm in arms], axis=1))
        for arm in (a for a in arms if a != OURS):
            raw_lower[(name, arm)] = wilcoxon(scores[OURS], scores[arm], "less")
            raw_higher[(name, arm)] = wilcoxon(scores[OURS], scores[arm], "greater")
        tables[name] = {
            "table": result["table"],
            "rule": f"epoch_budget={result['epoch_budget']}"
            if result["epoch_budget"]
            else f"trials={result['trials']}",
            "seeds": result["seeds"],
            "first_seed": result.get("first_seed", 0),
            "seed_set": result.get("seed_set", "other"),
            "effect_vs_search": {arm: effect(scores[OURS], scores[arm]) for arm in arms if arm != OURS},
            "normalised_iqm": {arm: iqm(values) for arm, values in scores.items()},
            "search_reaches_random_asha_final_at_share_of_random_asha_wall": reach_share(at_k),
            "mean_rank": average_ranks(blocks[-1], arms),
        }
    lower, higher = holm(raw_lower), holm(raw_higher)
    for (name, arm), p in lower.items():
        tables[name].setdefault("p_search_lower_holm", {})[arm] = p
        tables[name].setdefault("p_search_higher_holm", {})[arm] = higher[(name, arm)]
    for table in tables.values():
        share = table["search_reaches_random_asha_final_at_share_of_random_asha_wall"]
        table["target"] = {
            "below_random_asha": table["p_search_lower_holm"][RANDOM_ASHA] < ALPHA,
            "none_ahead": all(p >= ALPHA for p in table["p_search_higher_holm"].values()),
            "reaches_in_60pct": share is not None and share <= 0.6,
        }
    scores = np.concatenate(blocks)
    ranks = average_ranks(scores, arms)
    adjusted = pairwise_holm(scores, arms)
    return {
        "concurrency": int(concurrency),
        "tables": tables,
        "by_table": by_table(tables, arms),
        "targets": targets(tables),
        "blocks": len(scores),
        "mean_rank": ranks,
        "friedman_p": friedman(scores),
        "pairs_holm": {f"{a} vs {b}": p for (a, b), p in adjusted.items()},
        "cliques": cliques(ranks, adjusted),
    }


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


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replay_stats", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="replay_cli results JSON, one per table")
    parser.add_argument("--concurrency", default="2", help="trials side by side, comma-separated (2: on 2 cores)")
    parser.add_argument("--figures", type=Path, default=Path("benchmarks/results/figures"))
    parser.add_argument("--out")
    args = parser.parse_args()
    results = [json.loads(Path(path).read_text()) for path in args.results]
    args.figures.mkdir(parents=True, exist_ok=True)
    every = {"results": [portable(path) for path in args.results], "concurrency": {}}
    for k in args.concurrency.split(","):
        figures = every["concurrency"][k] = compare(results, k)
        for result in results:
            plot_anytime(result, k, args.figures / f"anytime-{result['space']}-{k}.png")
        plot_critical_difference(figures, args.figures / f"critical-difference-{k}.png")
        print_figures(figures)
    if args.out:
        Path(args.out).write_text(json.dumps(every, indent=1))


def print_figures(figures: dict) -> None:
    for name, table in figures["tables"].items():
        share = table["search_reaches_random_asha_final_at_share_of_random_asha_wall"]
        print(
            f"{name} ({table['rule']}, {figures['concurrency']} side by side, {table['seeds']} seeds): "
            f"normalised regret IQM; p of the search lower (higher), Holm over every table and arm"
        )
        for arm, value in table["normalised_iqm"].items():
            p = (
                ""
                if arm == OURS
                else (f" p {table['p_search_lower_holm'][arm]:.3g} ({table['p_search_higher_holm'][arm]:.3g})")
            )
            print(f"  {arm:22s} {value:.3f} rank {table['mean_rank'][arm]:.2f}{p}")
        print(
            f"  the search's median reaches random + ASHA's final median at "
            f"{'never' if share is None else f'{share:.0%}'} of random + ASHA's wall"
        )
        met = ", ".join(f"{name} {'yes' if ok else 'no'}" for name, ok in table["target"].items())
        print(f"  target: {met}")
    for name, table in figures["tables"].items():
        sizes = ", ".join(
            f"{arm} {e['median_difference']:+.3f} (r {e['rank_biserial']:+.2f})"
            for arm, e in table["effect_vs_search"].items()
        )
        print(f"{name}: effect, the arm's normalised regret minus the search's (median over seeds): {sizes}")
    table_ranks = figures["by_table"]["mean_rank"]
    ordered = ", ".join(f"{arm} {rank:.2f}" for arm, rank in sorted(table_ranks.items(), key=lambda x: x[1]))
    print(f"the table as the unit, mean rank over {len(figures['tables'])} tables: {ordered}")
    goal = figures["targets"]
    print(
        f"targets: ahead of random + ASHA on {', '.join(goal['ahead_of_random_asha_on']) or 'no table'}; "
        f"behind {goal['behind_on'] or 'no arm'}; met: {'yes' if goal['met'] else 'no'}"
    )
    ranks = ", ".join(f"{arm} {rank:.2f}" for arm, rank in sorted(figures["mean_rank"].items(), key=lambda x: x[1]))
    print(f"across {figures['blocks']} blocks: mean rank {ranks}; Friedman p {figures['friedman_p']:.3g}")
    print("no difference (Holm, 0.05): " + "; ".join(", ".join(group) for group in figures["cliques"]))


if __name__ == "__main__":
    main()
