"""The Pareto front of a finished multi-objective search and the hypervolume it dominates up to a reference point.

    python -m benchmarks.front_volume runs/<name> --reference val_acc=0.9,params=1000000

Prints each member (objectives, test accuracy) and the hypervolume of the front in the search's objectives, as a
share of the box from the reference point to the ideal one (accuracy 1, every cost 0), and the same with test
accuracy in place of val_acc.
"""

from __future__ import annotations

import argparse
import json

from search.results.pareto import as_minimised, hypervolume
from search.results.summary import read_summary


def front_volume(summary: dict, reference: dict[str, float], primary_from: str = "objectives") -> float:
    names, modes = [o["name"] for o in summary["objectives"]], [o["mode"] for o in summary["objectives"]]
    points = []
    for member in summary["front"]:
        values = dict(member["objectives"])
        if primary_from == "test_acc":
            values[names[0]] = member["test_acc"]
        points.append(as_minimised([values[n] for n in names], modes))
    box = 1.0  # from the reference to the ideal point (accuracy 1, every cost 0): 1 is the whole of it
    for name, mode in zip(names, modes):
        box *= abs((1.0 if mode == "max" else 0.0) - reference[name])
    return hypervolume(points, as_minimised([reference[n] for n in names], modes)) / box


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment")
    parser.add_argument("--reference", required=True, help="name=value for every objective, comma-separated")
    args = parser.parse_args()
    summary = read_summary(args.experiment)
    reference = {k: float(v) for k, v in (pair.split("=") for pair in args.reference.split(","))}
    for member in summary["front"]:
        print(json.dumps({"trial": member["trial_id"], **member["objectives"], "test_acc": member.get("test_acc")}))
    figures = {
        "front": len(summary["front"]),
        "trials": len(summary["trials"]),
        "hypervolume": front_volume(summary, reference),
        "hypervolume_test_acc": front_volume(summary, reference, "test_acc"),
        "reference": reference,
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
