"""Whole Markdown tables written from replay results, for the blocks of benchmarks/README.md and README.md that
benchmarks.readme_figures keeps equal to their JSON:

    <!-- block:arms benchmarks/results/STATS.json -->
    (the table, written by `python -m benchmarks.readme_figures`)
    <!-- /block -->

`arms`: a `replay_stats` result, every arm against the search on every table (normalised regret IQM, Holm p of
the search lower and higher, the rank-biserial effect) and the arm's mean rank with the table as the unit.
`pairs`: a `replay_pairs` result, a row per table and seed set, a column per pair A>B (both regret IQMs, the
uncorrected p of A lower and higher, the median epochs each spent).
`quality`: a `replay_stats` result of a registered family, a row per table and concurrency: the search against
random search + ASHA in regret (test-accuracy points), the difference with its 95% interval beside its Holm p, and
the epochs and seconds until the incumbent is within 0.5 points of the table's best.
Where a result holds it, a cell gives the difference in points (the arm's regret minus the search's, or B's minus
A's; mean, 95% bootstrap interval) and the Hodges-Lehmann shift (HL, 95%) beside its p-value.
"""

from __future__ import annotations


def p_text(value: float) -> str:
    """A p-value in two significant digits (`0.033`, `2e-6`): the `p` format of every figure and table."""
    return f"{value:.2g}".replace("e-0", "e-")


def arms_table(stats: dict, concurrency: str = "2") -> str:
    figures = stats["concurrency"][concurrency]
    tables = figures["tables"]
    names = list(tables)
    header = ["arm", *(f"`{name}`: normalised, p lower (higher), r" for name in names), "mean rank over tables"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    mean_rank = figures["by_table"]["mean_rank"]
    for arm in tables[names[0]]["normalised_iqm"]:
        cells = [f"`{arm}`".replace("|", "\\|")]
        for name in names:
            cells.append(arm_cell(tables[name], arm))
        cells.append(f"{mean_rank[arm]:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def arm_cell(table: dict, arm: str) -> str:
    value = f"{table['normalised_iqm'][arm]:.2f}"
    if arm not in table["p_search_lower_holm"]:
        return value
    lower, higher = table["p_search_lower_holm"][arm], table["p_search_higher_holm"][arm]
    effect = table["effect_vs_search"][arm]
    return f"{value}, {p_text(lower)} ({p_text(higher)}), {effect['rank_biserial']:+.2f}{points_text(effect)}"


def points_text(effect: dict) -> str:
    """`, +0.12 pt [-0.01, +0.25], HL +0.06 [+0.00, +0.12]`: a mean paired difference in points with its 95%
    interval, and the Hodges-Lehmann shift that goes with the Wilcoxon test with its own where the result holds it
    ('' where none)."""
    if "points" not in effect and "effect_pt" not in effect:
        return ""
    points = effect.get("points") or effect["effect_pt"]
    low, high = points["mean_interval"]
    return f", {points['mean']:+.2f} pt [{low:+.2f}, {high:+.2f}]{shift_text(points)}"


def shift_text(points: dict) -> str:
    """`, HL +0.06 [+0.00, +0.12]`: the Hodges-Lehmann shift in points, 95% ('' where the result has none)."""
    if "hodges_lehmann" not in points:
        return ""
    low, high = points["hodges_lehmann_interval"]
    return f", HL {points['hodges_lehmann']:+.2f} [{low:+.2f}, {high:+.2f}]"


def pairs_table(pairs: dict) -> str:
    results = pairs["results"]
    names = list(next(iter(results.values()))["pairs"])
    header = ["table, seeds", *(name.replace(">", " against ").replace("|", "\\|") for name in names)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for result in results.values():
        last = result["first_seed"] + result["seeds"] - 1
        where = f"`{result['space']}`, {result['seed_set']} {result['first_seed']}-{last}"
        lines.append("| " + " | ".join([where, *(pair_cell(result["pairs"][name]) for name in names)]) + " |")
    return "\n".join(lines)


def pair_cell(pair: dict) -> str:
    (first, a), (second, b) = pair["regret_iqm_pt"].items()
    epochs = pair["median_epochs"]
    return (
        f"{a:.3f} / {b:.3f}, p {p_text(pair['p_first_lower'])} ({p_text(pair['p_first_higher'])}), "
        f"{epochs[first]:.0f} / {epochs[second]:.0f} epochs{points_text(pair)}"
    )


def quality_table(stats: dict) -> str:
    header = [
        "table, side by side",
        "regret IQM, points: search / random + ASHA",
        "random + ASHA's minus the search's, points [95%]; Holm p lower (higher)",
        "within 0.5 points: median epochs, search / random + ASHA (share of seeds that get there)",
        "median replayed seconds to within 0.5 points",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for k, figures in stats["concurrency"].items():
        for name, table in figures["tables"].items():
            effect = table["effect_vs_search"]["random_asha"]["points"]
            low, high = effect["mean_interval"]
            lower, higher = (table[f"p_search_{side}_holm"]["random_asha"] for side in ("lower", "higher"))
            within = table["to_within_pt"]["0.5"]
            cells = [
                f"`{name.rsplit('.', 1)[-1]}`, {k}",
                f"{table['regret_iqm_pt']['search']:.2f} / {table['regret_iqm_pt']['random_asha']:.2f}",
                f"mean {effect['mean']:+.2f} [{low:+.2f}, {high:+.2f}], median {effect['median']:+.2f} "
                f"[{effect['median_interval'][0]:+.2f}, {effect['median_interval'][1]:+.2f}]{shift_text(effect)}; "
                f"{p_text(lower)} ({p_text(higher)})",
                f"{both(within, 'median_epochs')}{ratio_text(within['epochs_ratio'])} "
                f"({within['search']['reached']:.0%} / {within['random_asha']['reached']:.0%})",
                f"{both(within, 'median_wall_s')}{ratio_text(within['wall_ratio'])}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def both(within: dict, key: str) -> str:
    """The search's median / random + ASHA's ('never': half the seeds or more never got there)."""
    shown = ["never" if within[arm][key] is None else f"{within[arm][key]:.0f}" for arm in ("search", "random_asha")]
    return " / ".join(shown)


def ratio_text(ratio: dict) -> str:
    """`, ratio 0.61 [0.40, 0.95]`: the search's median over random + ASHA's, 95%; '' where a median is never."""
    value, (low, high) = ratio["ratio"], ratio["interval"]
    if value is None:
        return ""
    return f", ratio {value:.2f} [{low:.2f}, {'endless' if high is None else f'{high:.2f}'}]"


BLOCKS = {"arms": arms_table, "pairs": pairs_table, "quality": quality_table}
