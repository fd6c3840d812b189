"""The arms of `benchmarks.replay_cli` compared across learning-curve tables, as the field compares optimizers:
normalised regret (0: the table's best, 1: random search's median), per table one-sided Wilcoxon tests paired by
seed with Holm, the paired difference in test-accuracy points, the table as the unit (mean ranks, Friedman), a
critical-difference diagram and anytime curves.

    python -m benchmarks.replay_stats RESULTS.json... --family NAME [--figures DIR] [--out F]

A verdict only for a family registered in benchmarks/families.json whose replays the results are; any other: one
line, exit 2. Writes `anytime-<space>-<k>.png` per table and `critical-difference-<k>.png` into DIR.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.stats import rankdata

from benchmarks import portable, statistics
from benchmarks.families import named, registered_results
from benchmarks.readme_figures import points_text
from benchmarks.replay_cli import CORES

OURS, RANDOM, RANDOM_ASHA = "search", "random", "random_asha"
ALPHA = 0.05


def normalised(arms: dict) -> dict[str, np.ndarray]:
    """Each arm's final regrets over random search's median final regret; in points where a family replays no random
    search (then the tests within a table are the same, those pooled over tables pool points: `normalised_by`)."""
    scale = float(np.median(arms[RANDOM]["final_regret_pt"])) if RANDOM in arms else 1.0
    return {arm: np.asarray(f["final_regret_pt"]) / scale for arm, f in arms.items()}


def effect(ours: np.ndarray, other: np.ndarray, ours_pt: np.ndarray, other_pt: np.ndarray) -> dict:
    """The size of a difference on one table, paired by seed (above 0: the search lower), normalised and in points."""
    difference = float(np.median(other - ours))
    size = {"median_difference": difference, "rank_biserial": statistics.rank_biserial(ours, other)}
    return {**size, "points": statistics.paired_effect(ours_pt, other_pt)}


def time_to_quality(arms: dict) -> dict | None:
    """Per threshold (points from the table's best): every arm's median epochs and seconds to reach it, and the
    search's over random + ASHA's (None where the results hold no times)."""
    if "to_within_pt" not in arms[OURS] or RANDOM_ASHA not in arms:
        return None
    figures = {}
    for points in (f"{p:g}" for p in statistics.WITHIN_PT):
        ours, other = arms[OURS]["to_within_pt"][points], arms[RANDOM_ASHA]["to_within_pt"][points]
        keys = ("reached", "median_epochs", "median_wall_s")
        figures[points] = {arm: {k: f["to_within_pt"][points][k] for k in keys} for arm, f in arms.items()}
        figures[points]["epochs_ratio"] = statistics.median_ratio(ours["epochs"], other["epochs"])
        figures[points]["wall_ratio"] = statistics.median_ratio(ours["wall_s"], other["wall_s"])
    return figures


def by_table(tables: dict, arms: list[str]) -> dict:
    """The table as the unit (seeds are repeats within one): each arm's rank on each table, their mean, Friedman's p."""
    iqms = np.array([[table["normalised_iqm"][arm] for arm in arms] for table in tables.values()])
    ranks = {name: dict(zip(arms, rankdata(row).tolist())) for name, row in zip(tables, iqms)}
    friedman_p = statistics.friedman(iqms) if len(tables) > 2 else None
    return {"ranks": ranks, "mean_rank": statistics.average_ranks(iqms, arms), "friedman_p": friedman_p}


def targets(tables: dict, entry: dict | None = None) -> dict:
    """The target at one concurrency: a family that registers one, within 0.5 points in 1/1.5 of random + ASHA's
    epochs on every table, ahead after Holm on one, behind no arm; else ahead on two tables, behind no arm."""
    ahead = [name for name, table in tables.items() if table["target"]["below_random_asha"]]
    behind = {name: [arm for arm, p in t["p_search_higher_holm"].items() if p < ALPHA] for name, t in tables.items()}
    figures = {"ahead_of_random_asha_on": ahead, "behind_on": {name: arms for name, arms in behind.items() if arms}}
    if not (entry and "target" in entry):
        return {**figures, "met": len(ahead) >= min(2, len(tables)) and not any(behind.values())}
    slower = [n for n, t in tables.items() if not t["target"].get("within_half_point_in_two_thirds_epochs", False)]
    figures["not_within_half_point_in_two_thirds_epochs_on"] = slower
    return {**figures, "met": bool(ahead) and not any(behind.values()) and not slower}


def family_target(every: dict) -> dict:
    """The registered target over the family's every concurrency: met where met at each; what is missed, in words."""
    missed = []
    for k, figures in every["concurrency"].items():
        goal = figures["targets"]
        for name in goal["not_within_half_point_in_two_thirds_epochs_on"]:
            within = figures["tables"][name]["to_within_pt"]["0.5"]
            median = {arm: within[arm]["median_epochs"] for arm in (OURS, RANDOM_ASHA)}
            ratio = within["epochs_ratio"]["ratio"]
            missed.append(
                f"{k} side by side, {short(name)}: within 0.5 points not in 1/1.5 of random + ASHA's epochs (median "
                f"epochs, search {median[OURS] or 'never'}, random + ASHA {median[RANDOM_ASHA] or 'never'}"
                + ("" if ratio is None else f", ratio {ratio:.2f}")
                + f"; seeds that get there {within[OURS]['reached']:.0%} / {within[RANDOM_ASHA]['reached']:.0%})"
            )
        if not goal["ahead_of_random_asha_on"]:
            missed.append(f"{k} side by side: ahead of random + ASHA after Holm on no table")
        for name, arms in goal["behind_on"].items():
            missed.append(f"{k} side by side, {short(name)}: behind {', '.join(arms)} after Holm")
    goals = [figures["targets"] for figures in every["concurrency"].values()]
    clauses = {
        "within_half_point_in_two_thirds_epochs_on_every_table": not any(
            g["not_within_half_point_in_two_thirds_epochs_on"] for g in goals
        ),
        "ahead_of_random_asha_after_holm_on_a_table": all(g["ahead_of_random_asha_on"] for g in goals),
        "behind_no_arm_after_holm": not any(g["behind_on"] for g in goals),
    }
    return {"met": not missed, "clauses": clauses, "missed": missed}


def short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def reach_share(at_k: dict) -> float | None:
    """The share of random + ASHA's median wall at which the search's median regret reaches its final median."""
    target = float(np.median(at_k["arms"][RANDOM_ASHA]["final_regret_pt"]))
    median = at_k["arms"][OURS]["anytime_quartiles_pt"][1]
    reached = [t for t, v in zip(at_k["anytime_wall_s"], median) if v is not None and v <= target + 1e-9]
    return reached[0] / at_k["arms"][RANDOM_ASHA]["median_wall_s"] if reached else None


def adjust(comparisons: list[dict], entry: dict | None = None) -> None:
    """Holm over every (table, arm) of the comparisons given together, both directions as one family where the
    registration says `"holm_directions": "together"`; then each table's verdicts and the targets."""
    raw = {"lower": {}, "higher": {}}
    for figures in comparisons:
        for name, table in figures["tables"].items():
            for side, p_values in raw.items():
                for arm, p in table[f"p_search_{side}"].items():
                    p_values[(side, figures["concurrency"], name, arm)] = p
    together = entry and entry.get("holm_directions") == "together"
    holm = statistics.holm
    adjusted = holm({**raw["lower"], **raw["higher"]}) if together else {**holm(raw["lower"]), **holm(raw["higher"])}
    for figures in comparisons:
        for name, table in figures["tables"].items():
            for side in raw:
                key = (side, figures["concurrency"], name)
                table[f"p_search_{side}_holm"] = {arm: adjusted[(*key, arm)] for arm in table["p_search_lower"]}
            share = table["search_reaches_random_asha_final_at_share_of_random_asha_wall"]
            table["target"] = {
                "below_random_asha": table["p_search_lower_holm"][RANDOM_ASHA] < ALPHA,
                "none_ahead": all(p >= ALPHA for p in table["p_search_higher_holm"].values()),
                "reaches_in_60pct": share is not None and share <= 0.6,
            }
            if within := table["to_within_pt"] and table["to_within_pt"]["0.5"]:
                ours, other = (within[arm]["median_epochs"] for arm in (OURS, RANDOM_ASHA))  # None: never
                ratio = within["epochs_ratio"]["ratio"]  # None: random + ASHA's median past the budget, or ours
                met = ours is not None and (ratio <= 1 / 1.5 if other is not None else 1.5 * ours <= table["budget"])
                table["target"]["within_half_point_in_two_thirds_epochs"] = met
        figures |= {"targets": targets(figures["tables"], entry)} if "by_table" in figures else {}


def compare(results: list[dict], concurrency: str, entry: dict | None = None) -> dict:
    tables, blocks = {}, []
    for result in results:
        at_k = result["concurrency"][concurrency]
        scores = normalised(at_k["arms"])
        arms = list(scores)
        others = [arm for arm in arms if arm != OURS]
        blocks.append(np.stack([scores[arm] for arm in arms], axis=1))
        points = {arm: np.asarray(f["final_regret_pt"]) for arm, f in at_k["arms"].items()}
        rule = f"epoch_budget={result['epoch_budget']}" if result["epoch_budget"] else f"trials={result['trials']}"
        tables[result["space"]] = {
            "table": result["table"],
            "rule": rule,
            "budget": result["epoch_budget"],  # trial-epochs a search may spend (0: a trial count stops it)
            "seeds": result["seeds"],
            "first_seed": result.get("first_seed", 0),
            "seed_set": result.get("seed_set", "other"),
            "effect_vs_search": {arm: effect(scores[OURS], scores[arm], points[OURS], points[arm]) for arm in others},
            "p_search_lower": {arm: statistics.wilcoxon(scores[OURS], scores[arm], "less") for arm in others},
            "p_search_higher": {arm: statistics.wilcoxon(scores[OURS], scores[arm], "greater") for arm in others},
            "to_within_pt": time_to_quality(at_k["arms"]),
            "normalised_iqm": {arm: statistics.iqm(values) for arm, values in scores.items()},
            "normalised_by": RANDOM if RANDOM in at_k["arms"] else "points",
            "regret_iqm_pt": {arm: statistics.iqm(values) for arm, values in points.items()},
            "search_reaches_random_asha_final_at_share_of_random_asha_wall": reach_share(at_k),
            "mean_rank": statistics.average_ranks(blocks[-1], arms),
        }
    scores = np.concatenate(blocks)
    ranks, adjusted = statistics.average_ranks(scores, arms), statistics.pairwise_holm(scores, arms)
    figures = {"concurrency": int(concurrency), "tables": tables}
    adjust([figures], entry)
    return {
        **figures,
        "by_table": by_table(tables, arms),
        "targets": targets(tables, entry),
        "blocks": len(scores),
        "mean_rank": ranks,
        "friedman_p": statistics.friedman(scores),
        "pairs_holm": {f"{a} vs {b}": p for (a, b), p in adjusted.items()},
        "cliques": statistics.cliques(ranks, adjusted),
    }


def seconds_assumption(concurrencies: list) -> dict:
    """How the replays turned the table's seconds into wall time (benchmarks.replay.replay_search)."""
    return {
        "cores": CORES,
        "slowdown": {str(k): max(1.0, int(k) / CORES) for k in concurrencies},
        "assumption": f"every concurrency replayed as on a {CORES}-core machine, one job a core; at 4 side by side "
        "not the 4 cores or one GPU on which run puts 4 side by side; from each table's seconds as it was built (one "
        "whose header names a device: that device shared by the build's jobs, not a core a job)",
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replay_stats", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="replay_cli results JSON, one per table")
    parser.add_argument("--family", help="the registered family (benchmarks/families.json) the results answer")
    parser.add_argument("--figures", type=Path, default=Path("benchmarks/results/figures"))
    parser.add_argument("--out")
    args = parser.parse_args()
    entry, results = registered_results(args.family, "arms", args.results)
    args.figures.mkdir(parents=True, exist_ok=True)
    compared = {str(k): compare(results, str(k), entry) for k in entry["concurrency"]}
    every = {"results": [portable(path) for path in args.results], "concurrency": compared}
    if entry.get("holm_over") == "family":
        adjust(list(every["concurrency"].values()), entry)
    every |= {"target": family_target(every)} if "target" in entry else {}
    every["replayed_seconds"] = seconds_assumption(entry["concurrency"])
    every["family"] = named(args.family, entry)
    if any("peers" in result for result in results):  # each peer's version, as its replays ran
        every["peers"] = {name: version for result in results for name, version in result.get("peers", {}).items()}
    for k, figures in every["concurrency"].items():
        for result in results:
            statistics.plot_anytime(result, k, OURS, args.figures / statistics.anytime_figure(result["space"], k))
        statistics.plot_critical_difference(figures, OURS, args.figures / f"critical-difference-{k}.png")
        print_figures(figures)
    if args.out:
        Path(args.out).write_text(json.dumps(every, indent=1))


def print_figures(figures: dict) -> None:
    """Per table each arm's normalised regret IQM and Holm p of the search lower (higher); the targets; the ranks."""
    for name, table in figures["tables"].items():
        print(f"{name} ({table['rule']}, {figures['concurrency']} side by side, {table['seeds']} seeds):")
        for arm, value in table["normalised_iqm"].items():
            lower, higher = table["p_search_lower_holm"].get(arm), table["p_search_higher_holm"].get(arm)
            p = "" if lower is None else f" p {lower:.3g} ({higher:.3g}){points_text(table['effect_vs_search'][arm])}"
            print(f"  {arm:22s} {value:.3f}{p}")
        print("  target: " + ", ".join(f"{key} {'yes' if ok else 'no'}" for key, ok in table["target"].items()))
    goal, mean_rank = figures["targets"], figures["by_table"]["mean_rank"]
    ranks = ", ".join(f"{arm} {mean_rank[arm]:.2f}" for arm in sorted(mean_rank, key=mean_rank.get))
    print(f"mean rank over the tables: {ranks}; ahead of random + ASHA on {goal['ahead_of_random_asha_on'] or 'none'}")
    print(f"behind {goal['behind_on'] or 'no arm'}; target met: {'yes' if goal['met'] else 'no'}")


if __name__ == "__main__":
    main()
