"""A learning-curve table (benchmarks.curve_table) as the replays read it, and the search's pieces they run on it:
its proposal path over an in-memory study and its ASHA, exactly as `python -m search run` sets them up. A
configuration a sampler proposes is snapped to the table's nearest grid point (in log space for a log-scaled
float); an epoch's validation score is the table's for the replay's seed (the noise a search sees); the incumbent
is the trial the search's own rule (`search.results.score`) ranks first by those scores, and it is judged by its test
accuracy at that epoch averaged over the table's seeds. Regret: the table's best such mean test accuracy minus the
incumbent's.

`replay` runs given configurations one after another under the search's ASHA (`FixedArm`), the order
`benchmarks.replay_check` runs real searches through Ray in to compare their stops; `benchmarks.replay_cli` replays
whole searches as the command line runs them.

A held-out table (its header says `"held_out": true`: a workload no default was chosen on, benchmarks/curve_table.py)
opens only for a caller that says it reports rather than tunes (`held_out_ok=True`); every other read is refused.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import itertools
import json
import math
from dataclasses import dataclass, field

import numpy as np
from optuna.distributions import FloatDistribution

from search.results.score import standing_row
from search.results.summary import best_rank
from search.running.asha.study_asha import study_asha
from search.running.proposals.searcher import StudySearcher
from search.running.study.record import StudyRecord
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.schedules import first_rung, schedules_of
from trainables.foundation.space import Space, load_space
from trainables.foundation.trial_files import TRIAL_KEY

DEFAULTS = RunConfig()  # the search's defaults: trials, epochs, reduction, sampler


@dataclass
class CurveTable:
    """A learning-curve table: per grid configuration, [seed, epoch] arrays of validation and test accuracy."""

    space: str
    epochs: int
    seeds: list[int]
    grid: dict[str, list]
    val: dict[tuple, np.ndarray]
    test: dict[tuple, np.ndarray]
    s: dict[tuple, np.ndarray] = field(default_factory=dict)  # seconds from the start to each epoch's end
    fixed: dict = field(default_factory=dict)  # constants the table's rows trained with beyond the space's
    held_out: str = ""  # a held-out workload's name: the table is for reports only, no default may be chosen on it

    @classmethod
    def load(cls, path, held_out_ok: bool = False) -> CurveTable:
        """The table at `path`; a held-out one only with `held_out_ok` (the caller reports, it does not tune)."""
        with gzip.open(path, "rt") as stream:
            header = json.loads(stream.readline())
            if header.get("held_out") and not held_out_ok:
                raise held_out_refusal(path, header.get("workload", header["space"]))
            rows = [json.loads(line) for line in stream if line.strip()]
        grid, seeds = header["grid"], header["seeds"]
        val, test, seconds = {}, {}, {}
        for row in rows:
            key = tuple(row["config"][name] for name in grid)
            slot = seeds.index(row["seed"])
            for into, values in ((val, row["val"]), (test, row["test"]), (seconds, row["s"])):
                into.setdefault(key, np.full((len(seeds), header["epochs"]), np.nan))[slot] = values
        fixed, workload = header.get("fixed", {}), header.get("workload", header["space"])
        held_out = workload if header.get("held_out") else ""
        return cls(header["space"], header["epochs"], seeds, grid, val, test, seconds, fixed, held_out)

    def key(self, config: dict, space: dict) -> tuple:
        """The grid point nearest to `config`."""
        return tuple(nearest(values, config[name], space.get(name)) for name, values in self.grid.items())

    def mean_test(self, key: tuple, epoch: int) -> float:
        return float(np.mean(self.test[key][:, epoch - 1]))

    def best_mean_test(self) -> float:
        return max(float(np.max(np.mean(test, axis=0))) for test in self.test.values())


def table_space(table: CurveTable) -> Space:
    """The table's space with the constants its rows trained with (e.g. `lr_schedule=cosine`), which decide how a
    trial is scored (search.results.score)."""
    space = load_space(table.space)
    return dataclasses.replace(space, constants={**space.constants, **table.fixed}) if table.fixed else space


def exhaustive_regret(table: CurveTable, space: Space) -> float:
    """The floor: the regret of training every configuration and choosing by the replayed seed's validation score
    (ties averaged), averaged over the table's seeds. Searches that reach it are done: what is left is noise."""
    regrets = []
    for slot in range(len(table.seeds)):
        standing = []
        for key, val in table.val.items():
            config = {**space.constants, **dict(zip(table.grid, key))}
            rows = [{"epoch": epoch, "m": float(v)} for epoch, v in enumerate(val[slot], start=1)]
            row = standing_row(rows, config, "m", space.mode)
            standing.append((row["m"] if space.mode == "max" else -row["m"], table.mean_test(key, row["epoch"])))
        top = max(score for score, _ in standing)
        regrets.append(table.best_mean_test() - float(np.mean([test for score, test in standing if score == top])))
    return float(np.mean(regrets))


def nearest(values: list, value, distribution=None):
    log = isinstance(distribution, FloatDistribution) and distribution.log
    position = math.log if log else float
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return value  # a categorical's own choice
    return min(values, key=lambda v: abs(position(v) - position(value)))


class Replay:
    """One replayed search's bookkeeping: epochs spent and, after each, the incumbent's regret."""

    def __init__(self, table: CurveTable, space: Space, seed: int, budget: int):
        self.table, self.space, self.budget = table, space, budget
        self.seed_slot = seed % len(table.seeds)
        self.best = table.best_mean_test()
        self.regret = np.full(budget, np.nan)
        self.standing: dict[int, tuple] = {}  # trial number -> (its rank for the best, table key, standing epoch)
        self.spent = 0

    @property
    def done(self) -> bool:
        return self.spent >= self.budget

    def observe(self, trial: str, key: tuple, config: dict, rows: list[dict]) -> float:
        """The next epoch of `trial`: its validation score for the replay's seed (spends one epoch of the budget)."""
        epoch = len(rows) + 1
        value = float(self.table.val[key][self.seed_slot, epoch - 1])
        rows.append({"epoch": epoch, "m": value})
        self.standing[int(trial)] = standing_of(rows, {**self.space.constants, **config}, key, self.space, self.table)
        chosen_key, chosen_epoch = incumbent(self.standing)
        self.regret[self.spent] = self.best - self.table.mean_test(chosen_key, chosen_epoch)
        self.spent += 1
        return value


def standing_of(rows: list[dict], config: dict, key: tuple, space: Space, table: CurveTable) -> tuple:
    """What the product's summary ranks a trial by (search.results.summary.best_rank of its standing row), with the
    table's key and that row's epoch, where the trial's test accuracy is read once it is chosen."""
    row = standing_row(rows, config, "m", space.mode)
    return best_rank(row, config, table.epochs, space.mode, "m"), key, row["epoch"]


def incumbent(standing: dict[int, tuple]) -> tuple[tuple, int]:
    """(key, epoch) of the trial the summary puts first: the highest rank, the earlier trial among equal ranks (the
    summary sorts the study's trials, in their order, stably). No test accuracy enters the choice."""
    number = max(standing, key=lambda n: (standing[n][0], -n))
    return standing[number][1], standing[number][2]


def study_searcher(space: Space, sampler, epochs: int, objectives=None, order_numbers: bool = True) -> StudySearcher:
    """The search's proposal path: its `StudySearcher` over an in-memory study of the space, with `sampler`;
    `order_numbers`: as search.running.study.coding.SpaceCoding takes it."""
    record = StudyRecord.in_memory(
        space.hyperparameters,
        space.metric,
        space.mode,
        sampler,
        epochs,
        constants=space.constants,
        objectives=objectives,
        order_numbers=order_numbers,
    )
    return StudySearcher(record, [], space.metric, space.mode)


class FixedArm:
    """Given configurations in order, under the search's ASHA (tests; the check against real searches)."""

    def __init__(self, space: Space, configs: list[dict], epochs: int):
        self.configs = list(configs)
        self.scheduler, self.metric = search_asha(space, epochs), space.metric
        self.reached: list[int] = []  # each ended trial's last epoch
        self.count = 0

    def propose(self) -> dict | None:
        """The next given configuration (None: all have run)."""
        if not self.configs:
            return None
        self.trial, self.count = _Named(str(self.count)), self.count + 1
        self.scheduler.on_trial_add(None, self.trial)
        return self.configs.pop(0)

    def tell(self, epoch: int, value: float) -> bool:
        """An epoch's score; True: the trial stops here."""
        from ray.tune.schedulers import TrialScheduler

        self.last_epoch = epoch
        result = {"epoch": epoch, self.metric: value}
        return self.scheduler.on_trial_result(None, self.trial, result) == TrialScheduler.STOP

    def end(self, completed: bool) -> None:
        self.reached.append(self.last_epoch)
        self.scheduler.on_trial_remove(None, self.trial)


@dataclass(frozen=True)
class _Named:
    """What the search's ASHA reads of a Tune trial: its config's trial id."""

    trial_id: str

    @property
    def config(self) -> dict:
        return {TRIAL_KEY: self.trial_id}


def search_asha(space: Space, epochs: int):
    """ASHA exactly as `python -m search run` sets it up for `space` at `epochs` (grace past the lr warm-up)."""
    scheduler = unset_asha(space, epochs)
    scheduler.set_search_properties(space.metric, space.mode)
    return scheduler


def unset_asha(space: Space, epochs: int):
    """The search's ASHA before the Tuner gives it metric and mode, as `search.running.tuner` builds it."""
    config = RunConfig(epochs=epochs)
    config.grace = first_rung(epochs, schedules_of(space.constants, space.hyperparameters, {}))
    return study_asha(config)


def replay(table: CurveTable, space: Space, arm, seed: int, budget: int) -> Replay:
    """Proposes, trains (reads) and stops trials until `budget` epochs are spent (or the arm has no more)."""
    run = Replay(table, space, seed, budget)
    for trial in itertools.count():
        if run.done:
            return run
        config = arm.propose()
        if config is None:
            return run
        key, rows, completed = table.key(config, space.hyperparameters), [], False
        while not run.done:
            value = run.observe(str(trial), key, config, rows)
            stop = arm.tell(len(rows), value)
            completed = len(rows) == table.epochs
            if stop or completed:
                break
        arm.end(completed)
    return run


def held_out_refusal(path, workload: str) -> UsageError:
    return UsageError(
        f"{path}: a held-out table (workload {workload}): no default may be chosen on it, so only a report reads it "
        "(replay_cli on seeds outside the tuning set)"
    )


_REPORTING: set[str] = set()  # held-out tables this process opened for a report (forked workers inherit it)


def _table(path: str, held_out_ok: bool = False) -> CurveTable:
    """A table read once per process (a worker replays many seeds on it). A held-out table only with `held_out_ok`,
    or once this process (or the one it forked from) opened it so: the caller reports, it does not tune."""
    key = str(path)
    table = _read(key)
    if table.held_out and not (held_out_ok or key in _REPORTING):
        raise held_out_refusal(key, table.held_out)
    if held_out_ok:
        _REPORTING.add(key)
    return table


@functools.cache
def _read(path: str) -> CurveTable:
    return CurveTable.load(path, held_out_ok=True)  # the one reader that decides is _table
