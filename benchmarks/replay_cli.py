"""Searches replayed as the command line runs them, on a learning-curve table (benchmarks.curve_table): the CLI's
stop rule (`trials=N`, or `--epoch-budget N` as `epoch_budget=N`), 1, 2 or 4 trials side by side, each proposal
made while the others run (Optuna's constant liar sees them) and each epoch told to Tune's asynchronous ASHA when it
ends in wall time, and the product's tie rule for the best. No training and no Ray.

    python -m benchmarks.replay_cli benchmarks/results/tables/mlp_mnist-3ep-4seeds.jsonl.gz \\
        [--seeds 300] [--trials 8 | --epoch-budget 24] [--concurrency 1,2,4] [--out results.json]

Wall time: an epoch takes the seconds the table holds for it (one job a core), slowed by trials sharing the cores
(concurrency / CORES when above 1); a trial starts START_S after its slot frees (a trial process that Tune reuses),
the first in each slot FIRST_START_S after the search starts: the `overhead` benchmark's one-worker figures on the
2-core VM. The incumbent is the trial the summary ranks first: by its standing score (search.results.score), then
by more epochs; its regret is the table's best mean test accuracy minus its own at the standing epoch.

Arms: `search` (the search's sampler and ASHA as `run` sets them up) and `random_asha` (random proposals, the same
ASHA); statistics: IQM with a 95% bootstrap interval, a one-sided Wilcoxon signed-rank test paired by seed.
"""

from __future__ import annotations

import argparse
import heapq
import json
import multiprocessing
import warnings

import numpy as np
import optuna
from ray.tune.schedulers import TrialScheduler
from scipy import stats

from benchmarks import portable
from benchmarks.replay import DEFAULTS, _Named, _table, search_asha, study_searcher, table_space
from benchmarks.replay_figures import bootstrap_interval, iqm
from search.results.score import standing_row
from search.running.endings import Ending
from search.running.sampler import make_sampler, startup_trials
from search.running.space_coding import SpaceCoding
from trainables.foundation.schedules import first_rung, schedules_of
from trainables.foundation.space import Space
from trainables.foundation.trial_files import TRIAL_KEY

ARMS = (
    "search",
    "random_asha",
    "search_no_asha",
    "search_hyperband",
    "optuna_tpe_sh",
    "optuna_tpe_hyperband",
    "optuna_tpe_ordered_sh",
)
CORES = 2
FIRST_START_S, START_S = 4.2, 0.2  # the `overhead` benchmark's one-worker trials on the 2-core VM (its README)


class SideBySideArm:
    """The search's proposal path over an in-memory study, trials running side by side, with the search's ASHA (or
    none)."""

    def __init__(self, space: Space, sampler: str, seed: int, trials: int, epochs: int, asha: bool = True):
        self.searcher = study_searcher(space, make_sampler(sampler, seed, startup_trials(trials)), epochs)
        self.scheduler, self.metric = search_asha(space, epochs) if asha else None, space.metric

    def propose(self, trial_id: str) -> dict:
        if self.scheduler:
            self.scheduler.on_trial_add(None, _Named(trial_id))
        config = self.searcher.suggest(trial_id)
        return {name: value for name, value in config.items() if name != TRIAL_KEY}

    def tell(self, trial_id: str, epoch: int, value: float) -> bool:
        result = {"epoch": epoch, self.metric: value}
        self.searcher.on_trial_result(trial_id, result)
        stop = self.scheduler and self.scheduler.on_trial_result(None, _Named(trial_id), result)
        return stop == TrialScheduler.STOP

    def end(self, trial_id: str, completed: bool) -> None:
        if self.scheduler:
            self.scheduler.on_trial_remove(None, _Named(trial_id))
        self.searcher.on_trial_complete(trial_id)
        status = "completed" if completed else "stopped_early"
        self.searcher.record.end(trial_id, Ending(status))


class OptunaArm:
    """Optuna's ask and tell with one of its pruners, trials side by side: the loop a user of Optuna writes."""

    def __init__(self, space: Space, sampler, pruner, ordered: bool, seed: int):
        self.coding = SpaceCoding(space.hyperparameters, order_numbers=ordered)
        direction = "maximize" if space.mode == "max" else "minimize"
        # Hyperband assigns brackets by a hash of the study's name and the trial's number
        self.study = optuna.create_study(
            study_name=f"replay-{seed}", direction=direction, sampler=sampler, pruner=pruner
        )
        self.trials, self.last = {}, {}

    def propose(self, trial_id: str) -> dict:
        self.trials[trial_id] = self.study.ask(self.coding.distributions)
        return self.coding.to_config(self.trials[trial_id].params)

    def tell(self, trial_id: str, epoch: int, value: float) -> bool:
        self.trials[trial_id].report(value, epoch)
        self.last[trial_id] = value
        return self.trials[trial_id].should_prune()

    def end(self, trial_id: str, completed: bool) -> None:
        trial, value = self.trials.pop(trial_id), self.last.pop(trial_id)
        if completed:
            self.study.tell(trial, value)
        else:
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)


def make_arm(arm: str, space: Space, seed: int, trials: int, epochs: int):
    """Each arm with the same random start (a quarter of the trials, 2-10: the search's) and, where it stops trials,
    the search's grace and reduction factor (Optuna's Hyperband: from epoch 1 to the last)."""
    if arm in ("search", "random_asha", "search_no_asha"):
        sampler = "random" if arm == "random_asha" else DEFAULTS.sampler
        return SideBySideArm(space, sampler, seed, trials, epochs, asha=arm != "search_no_asha")
    startup = startup_trials(trials)
    grace = first_rung(epochs, schedules_of(space.constants, space.hyperparameters, {}))
    if arm.endswith("hyperband"):
        pruner = optuna.pruners.HyperbandPruner(
            min_resource=1, max_resource=epochs, reduction_factor=int(DEFAULTS.reduction)
        )
    else:
        pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=grace, reduction_factor=int(DEFAULTS.reduction))
    if arm == "search_hyperband":
        return OptunaArm(space, make_sampler(DEFAULTS.sampler, seed, startup), pruner, True, seed)
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup)  # Optuna's defaults, the same start
    return OptunaArm(space, sampler, pruner, arm == "optuna_tpe_ordered_sh", seed)


def replay_cli(job: tuple) -> dict:
    """One replayed search: (table path, arm, seed, trials, concurrency[, epoch budget]) -> its final regret, wall
    time, epochs spent, and the regret at each epoch's end in wall time. With an epoch budget, trials are proposed
    until it is spent (`trials` caps them) and the trials still running when it is are cut, as `epoch_budget=` does;
    the sampler's random start is sized for the trials the budget buys at full length."""
    path, arm, seed, trials, concurrency, *rest = job
    epoch_budget = rest[0] if rest else 0
    table = _table(path)
    space = table_space(table)
    slot_of_seed, best = seed % len(table.seeds), table.best_mean_test()
    slowdown = max(1.0, concurrency / CORES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        expected = min(trials, max(1, epoch_budget // table.epochs)) if epoch_budget else trials
        runner = make_arm(arm, space, seed, expected, table.epochs)
        events, live, standing, trace = [], {}, {}, []
        proposed, spent = 0, 0

        def start(at: float, first: bool) -> None:
            nonlocal proposed
            trial_id = str(proposed)
            proposed += 1
            config = runner.propose(trial_id)
            key = table.key(config, space.hyperparameters)
            seconds = np.diff(table.s[key][slot_of_seed], prepend=0.0) * slowdown
            began = at + (FIRST_START_S if first else START_S)
            live[trial_id] = {"config": config, "key": key, "rows": [], "ends": began + np.cumsum(seconds)}
            heapq.heappush(events, (float(live[trial_id]["ends"][0]), trial_id))

        for _ in range(min(concurrency, trials)):
            start(0.0, first=True)
        while events:
            now, trial_id = heapq.heappop(events)
            trial = live[trial_id]
            epoch = len(trial["rows"]) + 1
            value = float(table.val[trial["key"]][slot_of_seed, epoch - 1])
            trial["rows"].append({"epoch": epoch, "m": value})
            spent += 1
            row = standing_row(trial["rows"], {**space.constants, **trial["config"]}, "m", space.mode)
            sign = 1 if space.mode == "max" else -1
            standing[trial_id] = (sign * row["m"], row["epoch"], table.mean_test(trial["key"], row["epoch"]))
            trace.append((now, best - max(standing.values())[2]))
            if epoch_budget and spent >= epoch_budget:
                break  # the budget is spent: the trials still running are cut
            stop, completed = runner.tell(trial_id, epoch, value), epoch == table.epochs
            if stop or completed:
                runner.end(trial_id, completed)
                if proposed < trials:
                    start(now, first=False)
            else:
                heapq.heappush(events, (float(trial["ends"][epoch]), trial_id))
    return {"regret": trace[-1][1], "wall_s": trace[-1][0], "epochs": spent, "trace": trace}


def measure(path: str, seeds: int, trials: int, concurrencies: list[int], jobs: int, epoch_budget: int = 0) -> dict:
    work = [(path, arm, seed, trials, k, epoch_budget) for k in concurrencies for arm in ARMS for seed in range(seeds)]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        results = pool.map(replay_cli, work, chunksize=8)
    figures = {"table": portable(path), "seeds": seeds, "trials": trials, "epoch_budget": epoch_budget}
    figures["concurrency"] = {}
    for k in concurrencies:
        runs = {arm: [r for (_, a, _, _, c, _), r in zip(work, results) if a == arm and c == k] for arm in ARMS}
        regrets = {arm: np.asarray([r["regret"] for r in rs]) * 100 for arm, rs in runs.items()}  # in points
        random_final = float(np.median(regrets["random_asha"]))
        at_k = {}
        for arm, rs in runs.items():
            walls = np.asarray([r["wall_s"] for r in rs])
            at_k[arm] = {
                "regret_iqm_pt": iqm(regrets[arm]),
                "interval": bootstrap_interval(regrets[arm]),
                "median_wall_s": float(np.median(walls)),
                "median_epochs": float(np.median([r["epochs"] for r in rs])),
                "share_of_wall_to_random_asha_final_median": wall_share_to(rs, random_final / 100),
            }
        for arm in ARMS[1:]:  # paired by seed: every arm replays the same seeds
            at_k[arm]["p_search_lower"] = wilcoxon(regrets["search"], regrets[arm], "less")
            at_k[arm]["p_search_higher"] = wilcoxon(regrets["search"], regrets[arm], "greater")
        figures["concurrency"][str(k)] = at_k
    return figures


def wilcoxon(a, b, alternative: str) -> float:
    """One-sided Wilcoxon signed-rank p-value of `a` against `b` (1 where every pair is tied)."""
    if np.all(np.asarray(a) == np.asarray(b)):
        return 1.0
    return float(stats.wilcoxon(a, b, alternative=alternative).pvalue)


def wall_share_to(runs: list[dict], target: float) -> float:
    """The median over seeds of the share of its own wall time a search took to reach `target` regret (1: never)."""
    shares = []
    for run in runs:
        reached = next((at for at, regret in run["trace"] if regret <= target + 1e-12), None)
        shares.append(1.0 if reached is None else reached / run["wall_s"])
    return float(np.median(shares))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table")
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--trials", type=int, default=DEFAULTS.trials)
    parser.add_argument("--concurrency", default="1,2,4")
    parser.add_argument("--epoch-budget", type=int, default=0, help="the stop rule: trial-epochs (trials lifted)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out")
    args = parser.parse_args()
    concurrencies = [int(k) for k in args.concurrency.split(",")]
    trials = args.trials if not args.epoch_budget else max(args.trials, args.epoch_budget)
    figures = measure(args.table, args.seeds, trials, concurrencies, args.jobs, args.epoch_budget)
    for k, arms in figures["concurrency"].items():
        rule = f"epoch_budget={args.epoch_budget}" if args.epoch_budget else f"trials={args.trials}"
        print(f"{rule}, {k} side by side: regret in points, IQM [95%]; p of the search lower (higher)")
        for arm, f in arms.items():
            low, high = f["interval"]
            share = f["share_of_wall_to_random_asha_final_median"]
            p = f" p {f['p_search_lower']:.3g} ({f['p_search_higher']:.3g})" if arm != "search" else ""
            print(
                f"  {arm:22s} {f['regret_iqm_pt']:.3f} [{low:.3f}, {high:.3f}], wall {f['median_wall_s']:.1f} s, "
                f"{f['median_epochs']:.0f} epochs; random+ASHA's final median at {share:.0%} of the wall;{p}"
            )
    if args.out:
        with open(args.out, "w") as stream:
            json.dump(figures, stream, indent=1)


if __name__ == "__main__":
    main()
