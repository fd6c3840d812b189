"""Two arms of one `replay_cli` result compared head to head, paired by seed: how a default is decided between two
settings. The registered family (benchmarks/families.json) names the pairs `A>B` (is A's regret lower than B's?).

    python -m benchmarks.replay_pairs RESULT.json [RESULT.json...] --family NAME --out pairs.json [--figures DIR]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks import portable, statistics
from benchmarks.families import named, registered_results
from benchmarks.readme_figures import points_text
from benchmarks.statistics import anytime_figure, holm, iqm, paired_effect, plot_anytime, rank_biserial, wilcoxon

ALPHA = 0.05


def compare_pair(arms: dict, first: str, second: str) -> dict:
    a, b = (np.asarray(arms[arm]["final_regret_pt"]) for arm in (first, second))
    half = [arms[arm].get("to_within_pt", {}).get("0.5") for arm in (first, second)]  # results that hold times
    return {
        "regret_iqm_pt": {first: iqm(a), second: iqm(b)},
        "median_epochs": {arm: arms[arm]["median_epochs"] for arm in (first, second)},
        "p_first_lower": wilcoxon(a, b, "less"),
        "p_first_higher": wilcoxon(a, b, "greater"),
        "rank_biserial": rank_biserial(a, b),
        "effect_pt": paired_effect(a, b),
    } | ({"to_within_half_pt": time_ratio(first, second, *half)} if all(half) else {})


def time_ratio(first: str, second: str, a: dict, b: dict) -> dict:
    """Median epochs to within 0.5 points (None: never), A's over B's, at most 2/3 (None: B's never: the family's)."""
    ratio, medians = statistics.median_ratio(a["epochs"], b["epochs"]), (a["median_epochs"], b["median_epochs"])
    met = None if medians[1] is None else medians[0] is not None and ratio["ratio"] <= 2 / 3
    return {"median_epochs": dict(zip((first, second), medians)), "epochs_ratio": ratio, "in_two_thirds": met}


def compare_pairs(result: dict, pairs: list[tuple[str, str]], concurrency: str) -> dict:
    arms = result["concurrency"][concurrency]["arms"]
    missing = sorted({arm for pair in pairs for arm in pair} - arms.keys())
    if missing:
        raise SystemExit(f"{result['space']}: no arm {', '.join(missing)} (arms: {', '.join(arms)})")
    return {
        "space": result["space"],
        "seed_set": result.get("seed_set", "other"),
        "first_seed": result["first_seed"],
        "seeds": result["seeds"],
        "pairs": {f"{a}>{b}": compare_pair(arms, a, b) for a, b in pairs},
    }


def decide(compared: dict) -> dict:
    """Holm over every (result, pair), lower and higher apart; A adopted if lower somewhere, higher nowhere (one B)."""
    keys = [(where, name) for where, figures in compared.items() for name in figures["pairs"]]
    for side in ("lower", "higher"):
        adjusted = holm({key: compared[key[0]]["pairs"][key[1]][f"p_first_{side}"] for key in keys})
        for (where, name), p in adjusted.items():
            compared[where]["pairs"][name][f"p_first_{side}_holm"] = p
    decisions = {}
    for where, name in keys:
        pair, candidate = compared[where]["pairs"][name], name.split(">")[0]
        decision = decisions.setdefault(candidate, {"lower_on": [], "higher_on": []})
        for side in ("lower", "higher"):
            if pair[f"p_first_{side}_holm"] < ALPHA:
                decision[f"{side}_on"].append(f"{where}, against {name.split('>')[1]}")
    for candidate, decision in decisions.items():  # against several arms, the family's decision_rule decides
        one = len({name for _, name in keys if name.split(">")[0] == candidate}) == 1
        decision["adopt"] = (bool(decision["lower_on"]) and not decision["higher_on"]) if one else None
    return decisions


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replay_pairs", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--family", help="the registered family (benchmarks/families.json) the results answer")
    parser.add_argument("--out", required=True)
    parser.add_argument("--figures", type=Path, help="a folder for each result's anytime curves (the search bold)")
    args = parser.parse_args()
    entry, results = registered_results(args.family, "pairs", args.results)
    several, compared = len(entry["concurrency"]) > 1, {}
    for path, result in zip(args.results, results):
        for k in (str(k) for k in entry["concurrency"]):
            figures = compare_pairs(result, [tuple(text.split(">")) for text in entry["pairs"]], k)
            where = f"{figures['space']} {figures['seed_set']}" + (f", {k} side by side" if several else "")
            compared[where] = {"result": portable(path), **figures}
            if args.figures:
                args.figures.mkdir(parents=True, exist_ok=True)
                plot_anytime(result, k, "search", args.figures / anytime_figure(result["space"], k))
    verdict = {"concurrency": entry["concurrency"] if several else int(entry["concurrency"][0]), "results": compared}
    verdict |= {"decisions": decide(compared)} if entry["correction"].startswith("Holm") else {}
    verdict["family"] = named(args.family, entry)
    Path(args.out).write_text(json.dumps(verdict, indent=1))
    for where, figures in compared.items():
        for name, pair in figures["pairs"].items():
            first, second = name.split(">")
            print(  # the paired difference: B's regret minus A's
                f"{where}: {first} {pair['regret_iqm_pt'][first]:.3f} against {second} "
                f"{pair['regret_iqm_pt'][second]:.3f}; p lower {pair['p_first_lower']:.3g}, higher "
                f"{pair['p_first_higher']:.3g}; r {pair['rank_biserial']:+.2f}{points_text(pair)}"
                + ("" if (t := pair.get("to_within_half_pt")) is None else f"; to 0.5 pt: {t['median_epochs']}")
            )
    endings = {True: "adopt", False: "the product stays", None: "the family's decision_rule decides"}
    for candidate, decision in verdict.get("decisions", {}).items():
        ending = endings[decision["adopt"]]
        lower, higher = decision["lower_on"] or "none", decision["higher_on"] or "none"
        print(f"{candidate}: lower after Holm on {lower}, higher on {higher}: {ending}")


if __name__ == "__main__":
    main()
