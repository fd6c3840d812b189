"""A learning-curve table (benchmarks.curve_table) as the replays read it, and a search replayed on it as the
command line runs it: the search's own proposal path and ASHA, no training and no Ray.

A held-out table (its header says `"held_out": true`) opens only for a caller that reports rather than tunes."""

from __future__ import annotations

import dataclasses
import functools
import gzip
import heapq
import json
import math
from dataclasses import dataclass, field

import numpy as np
from optuna.distributions import CategoricalDistribution, FloatDistribution
from ray.tune.schedulers import TrialScheduler

from search.results.score import standing_row
from search.results.summary import best_rank
from search.running.asha.study_asha import StudyASHA
from search.running.ends.decider import Decider
from search.running.proposals.searcher import StudySearcher
from search.running.study.endings import EndFacts, Ending
from search.running.study.record import StudyRecord
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import UsageError
from trainables.foundation.schedules import first_rung, schedules_of
from trainables.foundation.space import Space, load_space
from trainables.foundation.trial_files import TRIAL_KEY

DEFAULTS = RunConfig()  # trials, epochs, reduction, sampler; not asha (arm search: asha=stop; search|asha=promote)
FIRST_START_S, START_S = 4.2, 0.2  # the `overhead` benchmark's one-worker trial starts on the 2-core VM (README)
_REPORTING: set[str] = set()  # held-out tables this process opened for a report (forked workers inherit it)


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
            workload = header.get("workload", header["space"])
            if header.get("held_out") and not held_out_ok:
                raise held_out_refusal(path, workload)
            rows = [json.loads(line) for line in stream if line.strip()]
        grid, seeds, val, test, seconds = header["grid"], header["seeds"], {}, {}, {}
        for row in rows:
            key, slot = tuple(row["config"][name] for name in grid), seeds.index(row["seed"])
            for into, values in ((val, row["val"]), (test, row["test"]), (seconds, row["s"])):
                into.setdefault(key, np.full((len(seeds), header["epochs"]), np.nan))[slot] = values
        held_out, fixed = workload if header.get("held_out") else "", header.get("fixed", {})
        return cls(header["space"], header["epochs"], seeds, grid, val, test, seconds, fixed, held_out)

    def key(self, config: dict, space: dict) -> tuple:
        """The grid point nearest to `config`."""
        return tuple(nearest(values, config[name], space.get(name)) for name, values in self.grid.items())

    def mean_test(self, key: tuple, epoch: int) -> float:
        return float(np.mean(self.test[key][:, epoch - 1]))

    def best_mean_test(self) -> float:
        return max(float(np.max(np.mean(test, axis=0))) for test in self.test.values())

    def exhaustive_floor_pt(self) -> dict:
        """The regret in points of an exhaustive search at the table's whole budget: per table seed, the grid point
        and epoch of the best validation accuracy (ties: the earliest epoch, then the first point; a point missing a
        row left out), scored as every replay is (mean test against the table's best): each seed's, their mean."""
        whole = [key for key, val in self.val.items() if not np.isnan(val).any()]
        points = [(key, epoch) for key in whole for epoch in range(1, self.epochs + 1)]
        chosen = [max(points, key=lambda p: (self.val[p[0]][slot, p[1] - 1], -p[1])) for slot in range(len(self.seeds))]
        per_seed = [round(100 * (self.best_mean_test() - self.mean_test(key, epoch)), 3) for key, epoch in chosen]
        return {"per_seed": per_seed, "mean": round(float(np.mean(per_seed)), 3)}


def table_space(table: CurveTable, as_choices=False) -> Space:
    """The table's space with the constants its rows trained with (e.g. `lr_schedule=cosine`); `as_choices`: each
    searched key the grid's values as choices (the finite space a user who wrote the grid would search)."""
    space = load_space(table.space)
    grid = {name: CategoricalDistribution(values) for name, values in table.grid.items() if as_choices}
    searched = {name: grid.get(name, distribution) for name, distribution in space.hyperparameters.items()}
    return dataclasses.replace(space, constants={**space.constants, **table.fixed}, hyperparameters=searched)


def nearest(values: list, value, distribution=None):
    """The grid value nearest to `value`, in log space for a log-scaled float; a categorical's own choice."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return value
    position = math.log if isinstance(distribution, FloatDistribution) and distribution.log else float
    return min(values, key=lambda v: abs(position(v) - position(value)))


def replay_search(
    table: CurveTable, space: Space, runner, seed: int, trials: int, concurrency=1, epoch_budget=0, cores=2
) -> dict:
    """One search replayed as the command line runs it: `trials` trials, `concurrency` side by side in wall time (each
    epoch the table's seconds, slowed by concurrency / `cores` above it), each proposed while the others run (after a
    paused trial that `runner.promoted()`, if any, resumes) and each epoch told to `runner` as it ends; an epoch budget
    cuts the trials still running. Returns the final regret, wall time, epochs, (seconds, regret) and trials."""
    slot, best, slowdown = seed % len(table.seeds), table.best_mean_test(), max(1.0, concurrency / cores)
    events, live, standing, trace = [], {}, {}, []

    def start(at: float, first: bool) -> None:
        trial_id = getattr(runner, "promoted", lambda: None)()  # a paused trial resumed (asha=promote), else a new one
        if trial_id is None and len(live) < trials:
            config = runner.propose(trial_id := str(len(live)))
            live[trial_id] = {"config": config, "key": table.key(config, space.hyperparameters), "rows": []}
        if trial_id is None:
            return
        trial, began = live[trial_id], at + (FIRST_START_S if first else START_S)
        done = len(trial["rows"])  # epochs a resumed trial trained before its pause: it goes on from its checkpoint
        seconds = np.diff(table.s[trial["key"]][slot], prepend=0.0)[done:] * slowdown
        trial["ends"] = np.concatenate([np.zeros(done), began + np.cumsum(seconds)])
        heapq.heappush(events, (float(trial["ends"][done]), trial_id))

    for _ in range(concurrency):
        start(0.0, first=True)
    while events:
        now, trial_id = heapq.heappop(events)
        trial = live[trial_id]
        epoch = len(trial["rows"]) + 1
        value = float(table.val[trial["key"]][slot, epoch - 1])
        trial["rows"].append({"epoch": epoch, "m": value})
        config = {**space.constants, **trial["config"]}
        standing[int(trial_id)] = standing_of(trial["rows"], config, trial["key"], space, table)
        trace.append((now, best - table.mean_test(*incumbent(standing))))
        if epoch_budget and len(trace) >= epoch_budget:
            break  # the budget is spent: the trials still running are cut
        stop, completed = runner.tell(trial_id, epoch, value), epoch == table.epochs
        if stop or completed:
            runner.end(trial_id, completed)
            start(now, first=False)
        else:
            heapq.heappush(events, (float(trial["ends"][epoch]), trial_id))
    return {"regret": trace[-1][1], "wall_s": trace[-1][0], "epochs": len(trace), "trace": trace, "trials": live}


def standing_of(rows: list[dict], config: dict, key: tuple, space: Space, table: CurveTable) -> tuple:
    """The summary's rank of a trial (best_rank of its standing row), the table's key and that row's epoch."""
    row = standing_row(rows, config, "m", space.mode)
    return best_rank(row, config, table.epochs, space.mode, "m"), key, row["epoch"]


def incumbent(standing: dict[int, tuple]) -> tuple[tuple, int]:
    """(key, epoch) of the trial the summary puts first: the highest rank, the earlier trial among equal ranks."""
    number = max(standing, key=lambda n: (standing[n][0], -n))
    return standing[number][1], standing[number][2]


def study_searcher(space: Space, sampler, epochs: int, objectives=None, order_numbers: bool = True) -> StudySearcher:
    """The search's proposal path: its `StudySearcher` over an in-memory study of the space, with `sampler`."""
    settings = dict(constants=space.constants, objectives=objectives, order_numbers=order_numbers)
    record = StudyRecord.in_memory(space.hyperparameters, space.metric, space.mode, sampler, epochs, **settings)
    return StudySearcher(record, [], space.metric, space.mode)


def end_in_study(record: StudyRecord, trial_id: str, completed: bool) -> None:
    """A trial's end, written into the study as the search's own end of a trial writes it."""
    status = "completed" if completed else "stopped_early"
    Decider.without_files(record).end(trial_id, EndFacts(0, written=Ending(status)))


@dataclass(frozen=True)
class _Named:
    """What the search's ASHA reads of a Tune trial: its config's trial id."""

    trial_id: str

    @property
    def config(self) -> dict:
        return {TRIAL_KEY: self.trial_id}


def asha_stops(scheduler, trial_id: str, result: dict) -> bool:
    return scheduler.on_trial_result(None, _Named(trial_id), result) == TrialScheduler.STOP


class FixedArm:
    """Given configurations in order, under the search's ASHA (tests; the check against real searches)."""

    def __init__(self, space: Space, configs: list[dict], epochs: int):
        self.configs = list(configs)
        self.scheduler, self.metric = search_asha(space, epochs), space.metric

    def propose(self, trial_id: str) -> dict:
        self.scheduler.on_trial_add(None, _Named(trial_id))
        return self.configs.pop(0)

    def tell(self, trial_id: str, epoch: int, value: float) -> bool:
        return asha_stops(self.scheduler, trial_id, {"epoch": epoch, self.metric: value})

    def end(self, trial_id: str, completed: bool) -> None:
        self.scheduler.on_trial_remove(None, _Named(trial_id))


def grace_of(space: Space, epochs: int) -> int:
    """The search's first rung: past the lr warm-up of the space's schedule."""
    return first_rung(epochs, schedules_of(space.constants, space.hyperparameters, {}))


def search_asha(space: Space, epochs: int, settings: dict | None = None, metric: bool = True):
    """ASHA as `search run` sets it up, or with a variant's grace and reduction; `metric=False`: a Tuner sets it."""
    settings = settings or {}
    config = RunConfig(epochs=epochs, reduction=float(settings.get("reduction", DEFAULTS.reduction)))
    grace = int(settings.get("grace", 0))
    config.grace = min(grace, epochs) if grace else grace_of(space, epochs)
    scheduler = StudyASHA(time_attr="epoch", max_t=epochs, grace_period=config.grace, reduction_factor=config.reduction)
    if metric:
        scheduler.set_search_properties(space.metric, space.mode)
    return scheduler


def held_out_refusal(path, workload: str) -> UsageError:
    return UsageError(
        f"{path}: a held-out table (workload {workload}): no default may be chosen on it, so only a report reads it "
        "(replay_cli on seeds outside the tuning set)"
    )


def _table(path: str, held_out_ok: bool = False) -> CurveTable:
    """A table read once per process; held out: only with `held_out_ok` or once this process (or its parent) did."""
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
