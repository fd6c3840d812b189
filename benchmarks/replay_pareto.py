"""ASHA on several objectives (search.running.asha.pareto_asha), replayed on a learning-curve table against ASHA on the
accuracy alone and against no early stopping: the search's multi-objective TPE proposes for every arm, and each arm
is judged by the hypervolume of the front its completed trials make, in (mean test accuracy over the table's
seeds at the epoch that stands for the trial, params), at the same budget in epochs.

    python -m benchmarks.replay_pareto benchmarks/results/tables/mlp_mnist-3ep-4seeds.jsonl.gz \\
        [--seeds 300] [--budgets 24,48,96] [--jobs 2] [--out results.json]

`params` is counted from each grid configuration by the model's own formula (for mlp_mnist: its Linear layers'
weights and biases), the way `trainables.costs` counts it in a trial. Hypervolume is normalised by the front of
every configuration of the table (1: the search found that whole front) above a reference point: the table's
median (and, as a check, tenth-percentile) final test accuracy, and its largest model. Statistics as in
benchmarks.replay_figures: the interquartile mean with a 95% bootstrap interval; one-sided Wilcoxon signed-rank
tests paired by seed (every arm replays the same seeds on the same table).

Arms: `pareto_asha` (the search's multi-objective TPE and ASHA), `pareto_asha_top_only` (without letting a trial on
its rung's front go on outside the best 1/reduction), `nsga2_pareto_asha` (Optuna's NSGA-II proposing, a
population of a third of the trials the budget buys at full length, at least 4), `asha_on_accuracy`,
`no_stopping`.
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import warnings

import numpy as np
import optuna

from benchmarks import portable
from benchmarks.replay import _Named, _table, study_searcher, table_space
from benchmarks.replay_figures import bootstrap_interval, iqm
from benchmarks.statistics import wilcoxon
from search.results.pareto import as_minimised, hypervolume
from search.results.score import standing_row
from search.running.asha.pareto_asha import ParetoASHA
from search.running.ends.decider import Decider
from search.running.proposals.sampler import make_sampler, startup_trials
from search.running.study.endings import EndFacts, Ending
from trainables.foundation.config import RunConfig
from trainables.foundation.objectives import Objective
from trainables.foundation.schedules import first_rung, schedules_of
from trainables.foundation.space import Space
from trainables.foundation.trial_files import TRIAL_KEY

ARMS = ("pareto_asha", "pareto_asha_top_only", "nsga2_pareto_asha", "asha_on_accuracy", "no_stopping")
DEFAULTS = RunConfig()


def mlp_params(config: dict, pixels: int = 784, classes: int = 10) -> int:
    """mlp_mnist's parameters: `layers` Linear layers of `hidden` units, then the classifier."""
    hidden, layers = int(config["hidden"]), int(config["layers"])
    return pixels * hidden + hidden + (layers - 1) * (hidden * hidden + hidden) + hidden * classes + classes


PARAMS = {"mlp_mnist": mlp_params}


def nsga2_sampler(seed: int, trials: int):
    """Optuna's NSGA-II with a population that fits the budget (its default of 50 would leave it random)."""
    return optuna.samplers.NSGAIISampler(seed=seed, population_size=max(4, trials // 3))


def objectives_of(space: Space) -> list[Objective]:
    return [Objective(space.metric, space.mode), Objective("params", "min")]


class ParetoArm:
    """The search's proposal path with two objectives (its multi-objective TPE over an in-memory study), under
    ParetoASHA on `stop_on` (both objectives, or the accuracy alone) or without early stopping (None)."""

    def __init__(
        self,
        space: Space,
        seed: int,
        budget: int,
        epochs: int,
        stop_on: list[Objective] | None,
        front_goes_on=True,
        nsga2=False,
    ):
        self.objectives = objectives_of(space)
        trials = budget // epochs
        sampler = nsga2_sampler(seed, trials) if nsga2 else make_sampler(DEFAULTS.sampler, seed, startup_trials(trials))
        self.searcher = study_searcher(space, sampler, epochs, self.objectives)
        grace = first_rung(epochs, schedules_of(space.constants, space.hyperparameters, {}))
        self.scheduler = None
        if stop_on:
            self.scheduler = ParetoASHA(
                objectives=stop_on,
                max_t=epochs,
                grace_period=grace,
                reduction_factor=DEFAULTS.reduction,
                front_goes_on=front_goes_on,
            )
        self.metric, self.count = space.metric, 0

    def propose(self) -> dict:
        self.trial, self.count = _Named(str(self.count)), self.count + 1
        config = self.searcher.suggest(self.trial.trial_id)
        return {name: value for name, value in config.items() if name != TRIAL_KEY}

    def tell(self, epoch: int, value: float, params: int) -> bool:
        from ray.tune.schedulers import TrialScheduler

        result = {"epoch": epoch, self.metric: value, "params": params}
        self.searcher.on_trial_result(self.trial.trial_id, result)
        return bool(self.scheduler) and self.scheduler.on_trial_result(None, self.trial, result) == TrialScheduler.STOP

    def end(self, completed: bool) -> None:
        self.searcher.on_trial_complete(self.trial.trial_id)
        ending = Ending("completed" if completed else "stopped_early")
        Decider.without_files(self.searcher.record).end(self.trial.trial_id, EndFacts(0, written=ending))


REFERENCES = {"median": 50, "tenth": 10}  # the reference accuracy: this percentile of the configurations' final


@functools.cache
def reference_and_best(path: str, percentile: int) -> tuple[tuple[float, float], float]:
    """The reference point (minimised: minus a percentile of the configurations' final mean test accuracy, the
    largest model) and the hypervolume of every configuration's (best mean test accuracy over epochs, params), for
    the table at `path` (once per process)."""
    table = _table(path)
    params_of = PARAMS[table.space]
    configs = [dict(zip(table.grid, key)) for key in table.test]
    finals = [float(np.mean(test[:, -1])) for test in table.test.values()]
    reference = (-float(np.percentile(finals, percentile)), float(max(params_of(c) for c in configs)) * 1.0001)
    points = [(-float(np.max(np.mean(test, axis=0))), params_of(c)) for c, test in zip(configs, table.test.values())]
    return reference, hypervolume(points, reference)


def replay_front(job: tuple) -> dict[str, float]:
    """One replay: (table path, arm, seed, budget) -> the normalised hypervolume of its completed trials' front, for
    each reference point."""
    path, arm, seed, budget = job
    table = _table(path)
    space = table_space(table)
    params_of = PARAMS[table.space]
    stop_on = {"pareto_asha": 2, "pareto_asha_top_only": 2, "nsga2_pareto_asha": 2, "asha_on_accuracy": 1}.get(arm, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        stopping = objectives_of(space)[:stop_on] or None
        runner = ParetoArm(
            space,
            seed,
            budget,
            table.epochs,
            stopping,
            front_goes_on=arm != "pareto_asha_top_only",
            nsga2=arm == "nsga2_pareto_asha",
        )
        slot, spent, points = seed % len(table.seeds), 0, []
        while spent < budget:
            config = runner.propose()
            key, rows, params = table.key(config, space.hyperparameters), [], params_of(config)
            completed = False
            while spent < budget:
                epoch = len(rows) + 1
                value = float(table.val[key][slot, epoch - 1])
                rows.append({"epoch": epoch, "m": value})
                spent += 1
                completed = epoch == table.epochs
                if runner.tell(epoch, value, params) or completed:
                    break
            runner.end(completed)
            if completed:
                row = standing_row(rows, {**space.constants, **config}, "m", space.mode)
                points.append(as_minimised((table.mean_test(key, row["epoch"]), params), ("max", "min")))
    volumes = {}
    for name, percentile in REFERENCES.items():
        reference, best = reference_and_best(path, percentile)
        volumes[name] = hypervolume(points, reference) / best
    return volumes


def measure(path: str, seeds: int, budgets: list[int], jobs: int) -> dict:
    work = [(path, arm, seed, budget) for budget in budgets for arm in ARMS for seed in range(seeds)]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        volumes = pool.map(replay_front, work, chunksize=8)
    by = {}
    for (_, arm, _, budget), volume in zip(work, volumes):
        for reference, value in volume.items():
            by.setdefault(reference, {}).setdefault(budget, {}).setdefault(arm, []).append(value)
    figures = {"table": portable(path), "seeds": seeds, "references": {}}
    for reference, budgets_of in by.items():
        figures["references"][reference] = {str(budget): summarise(arms) for budget, arms in budgets_of.items()}
    return figures


def summarise(arms: dict[str, list[float]]) -> dict:
    """Per arm: IQM with its interval, median, and one-sided Wilcoxon p-values (paired by seed) of ParetoASHA's
    hypervolume being higher, and lower, than the arm's."""
    ours = np.asarray(arms[ARMS[0]])
    figures = {}
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
        with open(args.out, "w") as stream:
            json.dump(figures, stream, indent=1)


if __name__ == "__main__":
    main()
