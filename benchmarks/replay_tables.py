"""Whole Markdown tables written from replay results, for the blocks of benchmarks/README.md and README.md that
benchmarks.readme_figures keeps equal to their JSON:

    <!-- block:arms benchmarks/results/STATS.json -->
    (the table, written by `python -m benchmarks.readme_figures`)
    <!-- /block -->

`arms`: a `replay_stats` result, every arm against the search on every table (normalised regret IQM, Holm p of
the search lower and higher, the rank-biserial effect) and the arm's mean rank with the table as the unit.
`pairs`: a `replay_pairs` result, a row per table and seed set, a column per pair A>B (both regret IQMs, the
uncorrected p of A lower and higher, the median epochs each spent).
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
    effect = table["effect_vs_search"][arm]["rank_biserial"]
    return f"{value}, {p_text(lower)} ({p_text(higher)}), {effect:+.2f}"


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
        f"{epochs[first]:.0f} / {epochs[second]:.0f} epochs"
    )


BLOCKS = {"arms": arms_table, "pairs": pairs_table}
