"""ASHA on several objectives (search.running.asha.pareto_asha), replayed on a learning-curve table against ASHA on the
accuracy alone and against no early stopping, the search's multi-objective TPE proposing for every arm: each arm is
judged by the hypervolume of its completed trials' front in (mean test accuracy, params) at the same epoch budget.

    python -m benchmarks.replay_pareto benchmarks/results/tables/mlp_mnist-3ep-4seeds.jsonl.gz \\
        [--seeds 300] [--budgets 24,48,96] [--jobs 2] [--out results.json]

Hypervolume is normalised by the front of every configuration of the table, above a reference point: the table's
median (and tenth-percentile) final test accuracy, and its largest model. Arms: `pareto_asha`,
`pareto_asha_top_only` (no trial on its rung's front goes on outside the best 1/reduction), `nsga2_pareto_asha`
(Optuna's NSGA-II proposing), `asha_on_accuracy`, `no_stopping`.
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import warnings
from pathlib import Path

import numpy as np
import optuna

from benchmarks import portable
from benchmarks.replay import DEFAULTS, _table, asha_stops, grace_of, replay_search, study_searcher, table_space
from benchmarks.replay_arms import SideBySideArm
from benchmarks.statistics import bootstrap_interval, iqm, wilcoxon
from search.results.pareto import as_minimised, hypervolume
from search.results.score import standing_row
from search.running.asha.pareto_asha import ParetoASHA
from search.running.proposals.sampler import make_sampler, startup_trials
from trainables.foundation.objectives import Objective
from trainables.foundation.space import Space

ARMS = ("pareto_asha", "pareto_asha_top_only", "nsga2_pareto_asha", "asha_on_accuracy", "no_stopping")
REFERENCES = {"median": 50, "tenth": 10}  # the reference accuracy: this percentile of the configurations' final


def mlp_params(config: dict, pixels: int = 784, classes: int = 10) -> int:
    """mlp_mnist's parameters: `layers` Linear layers of `hidden` units, then the classifier."""
    hidden, layers = int(config["hidden"]), int(config["layers"])
    return pixels * hidden + hidden + (layers - 1) * (hidden * hidden + hidden) + hidden * classes + classes


PARAMS = {"mlp_mnist": mlp_params}


def objectives_of(space: Space) -> list[Objective]:
    return [Objective(space.metric, space.mode), Objective("params", "min")]


class ParetoArm(SideBySideArm):
    """The search's proposal path with two objectives, under ParetoASHA on `stop_on` (both objectives, or the
    accuracy alone) or without early stopping (None); ends a trial as SideBySideArm does, on its own study."""

    def __init__(self, space: Space, seed: int, trials: int, epochs: int, stop_on, front_goes_on=True, nsga2=False):
        self.params_of = PARAMS[space.name]
        if nsga2:  # Optuna's NSGA-II, its population fit to the budget (its default of 50 would leave it random)
            sampler = optuna.samplers.NSGAIISampler(seed=seed, population_size=max(4, trials // 3))
        else:
            sampler = make_sampler(DEFAULTS.sampler, seed, startup_trials(trials))
        self.searcher = study_searcher(space, sampler, epochs, objectives_of(space))
        rules = dict(max_t=epochs, grace_period=grace_of(space, epochs), reduction_factor=DEFAULTS.reduction)
        self.scheduler = ParetoASHA(objectives=stop_on, front_goes_on=front_goes_on, **rules) if stop_on else None
        self.metric, self.params = space.metric, {}

    def propose(self, trial_id: str) -> dict:
        config = super().propose(trial_id)
        self.params[trial_id] = self.params_of(config)
        return config

    def tell(self, trial_id: str, epoch: int, value: float) -> bool:
        result = {"epoch": epoch, self.metric: value, "params": self.params[trial_id]}
        self.searcher.on_trial_result(trial_id, result)
        return bool(self.scheduler) and asha_stops(self.scheduler, trial_id, result)


@functools.cache
def reference_and_best(path: str, percentile: int) -> tuple[tuple[float, float], float]:
    """The reference point (minimised: minus a percentile of the configurations' final mean test accuracy, the largest
    model) and the hypervolume of every configuration's (best mean test accuracy, params); once per process."""
    table = _table(path)
    params_of, configs = PARAMS[table.space], [dict(zip(table.grid, key)) for key in table.test]
    finals = [float(np.mean(test[:, -1])) for test in table.test.values()]
    reference = (-float(np.percentile(finals, percentile)), float(max(params_of(c) for c in configs)) * 1.0001)
    points = [(-float(np.max(np.mean(test, axis=0))), params_of(c)) for c, test in zip(configs, table.test.values())]
    return reference, hypervolume(points, reference)


def replay_front(job: tuple) -> dict[str, float]:
    """(table path, arm, seed, budget) -> the normalised hypervolume of the completed trials' front per reference."""
    path, arm, seed, budget = job
    table = _table(path)
    space = table_space(table)
    stop_on = {"pareto_asha": 2, "pareto_asha_top_only": 2, "nsga2_pareto_asha": 2, "asha_on_accuracy": 1}.get(arm, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        stopping = objectives_of(space)[:stop_on] or None
        top_only, nsga2 = arm == "pareto_asha_top_only", arm == "nsga2_pareto_asha"
        runner = ParetoArm(space, seed, budget // table.epochs, table.epochs, stopping, not top_only, nsga2)
        run = replay_search(table, space, runner, seed, budget, epoch_budget=budget)
    points = []
    for trial in run["trials"].values():
        if len(trial["rows"]) == table.epochs:  # completed
            row = standing_row(trial["rows"], {**space.constants, **trial["config"]}, "m", space.mode)
            accuracy, params = table.mean_test(trial["key"], row["epoch"]), PARAMS[table.space](trial["config"])
            points.append(as_minimised((accuracy, params), ("max", "min")))
    references = {name: reference_and_best(path, percentile) for name, percentile in REFERENCES.items()}
    return {name: hypervolume(points, reference) / best for name, (reference, best) in references.items()}


def measure(path: str, seeds: int, budgets: list[int], jobs: int) -> dict:
    work = [(path, arm, seed, budget) for budget in budgets for arm in ARMS for seed in range(seeds)]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        volumes = pool.map(replay_front, work, chunksize=8)
    by = {}
    for (_, arm, _, budget), volume in zip(work, volumes):
        for reference, value in volume.items():
            by.setdefault(reference, {}).setdefault(budget, {}).setdefault(arm, []).append(value)
    references = {ref: {str(b): summarise(arms) for b, arms in budgets.items()} for ref, budgets in by.items()}
    return {"table": portable(path), "seeds": seeds, "references": references}


def summarise(arms: dict[str, list[float]]) -> dict:
    """Per arm: IQM with its interval, median, and one-sided Wilcoxon p of ParetoASHA's hypervolume higher (lower)."""
    ours, figures = np.asarray(arms[ARMS[0]]), {}
    for arm, values in arms.items():
        values = np.asarray(values)
        figures[arm] = {"iqm": iqm(values), "interval": bootstrap_interval(values), "median": float(np.median(values))}
        if arm != ARMS[0]:
            figures[arm]["p_pareto_asha_higher"] = wilcoxon(ours, values, "greater")
            figures[arm]["p_pareto_asha_lower"] = wilcoxon(ours, values, "less")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table")
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--budgets", default="24,48,96")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    figures = measure(args.table, args.seeds, [int(b) for b in args.budgets.split(",")], args.jobs)
    for reference, budgets in figures["references"].items():
        for budget, arms in budgets.items():
            print(f"reference accuracy at the {reference} percentile, budget {budget} epochs: normalised hypervolume")
            for arm, f in arms.items():
                p = ""
                if arm != ARMS[0]:
                    p = f", p(pareto_asha higher) {f['p_pareto_asha_higher']:.3g}, lower {f['p_pareto_asha_lower']:.3g}"
                low, high = f["interval"]
                print(f"  {arm:20s} IQM {f['iqm']:.4f} [{low:.4f}, {high:.4f}], median {f['median']:.4f}{p}")
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
