"""ASHA on several objectives: at each rung a trial goes on when it is among the best 1/reduction of the trials
recorded at that rung, ranked by non-dominated sorting (its Pareto front first, then crowding distance), as Syne
Tune's MOASHA ranks them, or when none of them is better in every objective (as ASHA always lets the best go on).
A Tune scheduler, keyed by the search's trial ids like `StudyASHA` (search.running.scheduler) and rebuilt from the
study when a search resumes or grows.

An objective that training does not change (`params`, `macs`) is known from a trial's first epoch, so a rung
compares the accuracy a trial reached there with what it costs. A row missing an objective passes its rung.
"""

from __future__ import annotations

import math

from optuna.trial import FrozenTrial, TrialState
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from search.results.pareto import as_minimised, nondominated_ranks, pareto_order
from search.running.study import COSTS_ATTR, INHERITED_ATTR, epoch_values, trial_id_of
from trainables.foundation.config import RunConfig
from trainables.foundation.objectives import Objective
from trainables.foundation.trial_files import trial_key


def rung_epochs(grace: int, reduction: float, max_t: int) -> list[int]:
    """ASHA's rungs as epochs: grace x reduction^k below max_t, each at the first whole epoch that reaches it (Tune's
    ASHA decides at the first report at or past a rung; the last epoch is no rung: the trial ends there)."""
    rungs, k = [], 0
    while grace * reduction**k < max_t:
        epoch = math.ceil(grace * reduction**k - 1e-9)
        if epoch < max_t and epoch not in rungs:
            rungs.append(epoch)
        k += 1
    return rungs


class ParetoASHA(FIFOScheduler):
    def __init__(
        self,
        *,
        objectives: list[Objective],
        max_t: int,
        grace_period: int,
        reduction_factor: float,
        time_attr: str = "epoch",
        history: list[FrozenTrial] = (),
        front_goes_on: bool = True,
    ):
        """`front_goes_on`: a trial on the first front of its rung goes on even outside the best 1/reduction."""
        super().__init__()
        self.objectives, self.reduction, self.time_attr = objectives, reduction_factor, time_attr
        self.front_goes_on = front_goes_on
        self.rungs = {epoch: {} for epoch in rung_epochs(grace_period, reduction_factor, max_t)}
        self.owed_stops: dict[str, int] = {}  # the search's id -> the rung epoch at which it is to be stopped
        self._learn(history)

    def set_search_properties(self, metric, mode, **spec) -> bool:
        return True  # the objectives are the scheduler's own

    def point_of(self, values: dict) -> tuple[float, ...] | None:
        """The objectives' values of one epoch, every one minimised; None when one is missing."""
        point = [values.get(o.name) for o in self.objectives]
        if any(not isinstance(v, (int, float)) or not math.isfinite(v) for v in point):
            return None
        return as_minimised(point, [o.mode for o in self.objectives])

    def decide(self, trial_id: str, epoch: int, values: dict) -> str:
        """Record the trial's point at rung `epoch` and say whether it goes on: among the best ceil(n / reduction)
        of the n trials recorded at that rung, or on their Pareto front (no trial recorded there is better in every
        objective: as ASHA lets the best go on). A rung the trial met before (an epoch replayed after a kill) it
        passed, as in Tune's ASHA: a decision a kill took with it is owed (`owed_stops`)."""
        recorded = self.rungs.get(epoch)
        point = self.point_of(values)
        if recorded is None or point is None or trial_id in recorded:
            return TrialScheduler.CONTINUE
        recorded[trial_id] = point
        ids = list(recorded)
        points = [recorded[i] for i in ids]
        here = ids.index(trial_id)
        keep = math.ceil(len(ids) / self.reduction)
        on_front = self.front_goes_on and nondominated_ranks(points)[here] == 0
        if pareto_order(points).index(here) < keep or on_front:
            return TrialScheduler.CONTINUE
        return TrialScheduler.STOP

    def _learn(self, trials: list[FrozenTrial]) -> None:
        """The rungs as the study's trials met them, in the order they were created; a running trial whose last
        recorded epoch is a rung it did not pass owes that stop (a kill took the decision with it)."""
        primary = self.objectives[0].name
        for trial in sorted(trials, key=lambda t: t.number):
            trial_id, costs = trial_id_of(trial), trial.user_attrs.get(COSTS_ATTR, {})
            decision, last = TrialScheduler.CONTINUE, 0
            for epoch, value in sorted(epoch_values(trial).items()):
                decision, last = self.decide(trial_id, epoch, {**costs, primary: value}), epoch
            passed_before = last <= trial.user_attrs.get(INHERITED_ATTR, 0)
            if trial.state == TrialState.RUNNING and decision == TrialScheduler.STOP and not passed_before:
                self.owed_stops[trial_id] = last

    def on_trial_result(self, tune_controller, trial, result: dict) -> str:
        trial_id, epoch = trial_key(trial), int(result.get(self.time_attr) or 0)
        owed = self.owed_stops.get(trial_id)
        if owed is not None and epoch >= owed:
            del self.owed_stops[trial_id]
            return TrialScheduler.STOP
        return self.decide(trial_id, epoch, result)

    def debug_string(self) -> str:
        sizes = ", ".join(f"epoch {epoch}: {len(points)}" for epoch, points in self.rungs.items())
        return f"ParetoASHA: trials recorded at each rung: {sizes}"


def pareto_asha(config: RunConfig, objectives: list[Objective], history: list[FrozenTrial] = ()) -> ParetoASHA:
    """The multi-objective ASHA the search sets up for `config` (whose grace is resolved)."""
    return ParetoASHA(
        objectives=objectives,
        max_t=config.epochs,
        grace_period=config.grace,
        reduction_factor=config.reduction,
        history=history,
    )
