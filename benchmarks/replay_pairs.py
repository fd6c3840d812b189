"""Two arms of one `replay_cli` result compared head to head, paired by seed: how a default is decided between two
settings (the search's sampler against Optuna's defaults, positions against values, one stop rule against another).

    python -m benchmarks.replay_pairs RESULT.json [RESULT.json...] --pair "A>B" [--pair ...] --out pairs.json

`A>B` asks whether A's regret is lower than B's. Per result (keyed "space seed-set") and pair: each arm's regret
IQM (test-accuracy points) and median epochs, the one-sided Wilcoxon signed-rank p of A lower and of A higher
(uncorrected: one decision per pair), and the matched-pairs rank-biserial correlation (1: A lower on every seed).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks import portable
from benchmarks.replay_figures import iqm
from benchmarks.statistics import rank_biserial, wilcoxon


def compare_pair(arms: dict, first: str, second: str) -> dict:
    a, b = (np.asarray(arms[arm]["final_regret_pt"]) for arm in (first, second))
    return {
        "regret_iqm_pt": {first: iqm(a), second: iqm(b)},
        "median_epochs": {arm: arms[arm]["median_epochs"] for arm in (first, second)},
        "p_first_lower": wilcoxon(a, b, "less"),
        "p_first_higher": wilcoxon(a, b, "greater"),
        "rank_biserial": rank_biserial(a, b),
    }


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


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replay_pairs", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--pair", action="append", required=True, help="\"A>B\": is A's regret lower than B's")
    parser.add_argument("--concurrency", default="2")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    pairs = []
    for text in args.pair:
        first, sep, second = text.partition(">")
        if not sep or not first or not second:
            parser.error(f'--pair {text}: write it "A>B"')
        pairs.append((first, second))
    compared = {}
    for path in args.results:
        result = json.loads(Path(path).read_text())
        figures = compare_pairs(result, pairs, args.concurrency)
        compared[f"{figures['space']} {figures['seed_set']}"] = {"result": portable(path), **figures}
    Path(args.out).write_text(json.dumps({"concurrency": int(args.concurrency), "results": compared}, indent=1))
    for figures in compared.values():
        for name, pair in figures["pairs"].items():
            first, second = name.split(">")
            print(
                f"{figures['space']} ({figures['seed_set']} seeds): {first} {pair['regret_iqm_pt'][first]:.3f} "
                f"against {second} {pair['regret_iqm_pt'][second]:.3f}; p lower {pair['p_first_lower']:.3g}, "
                f"higher {pair['p_first_higher']:.3g}; r {pair['rank_biserial']:+.2f}"
            )


if __name__ == "__main__":
    main()
