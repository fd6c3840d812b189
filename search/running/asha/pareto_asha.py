"""ASHA on several objectives: at each rung a trial goes on when it is among the best 1/reduction of the trials
recorded there, ranked by non-dominated sorting and crowding distance (as Syne Tune's MOASHA ranks them), or when
none of them is better in every objective. Its rungs are met, written and rebuilt as `StudyASHA`'s
(search.running.asha.rungs). A row missing an objective passes its rung.
"""

from __future__ import annotations

import math

from optuna.trial import FrozenTrial
from ray.tune.schedulers import TrialScheduler

from search.results.pareto import as_minimised, nondominated_ranks, pareto_order
from search.running.asha.in_order import InOrder
from search.running.asha.rungs import RungStops, milestones, rebuild
from trainables.foundation.objectives import Objective
from trainables.foundation.trial_files import trial_key


def rung_epochs(grace: int, reduction: float, max_t: int) -> list[int]:
    """The first whole epoch that meets each rung below max_t (the milestones are Tune's: search.running.asha.rungs)."""
    return sorted({math.ceil(m - 1e-9) for m in milestones(grace, reduction, max_t) if m < max_t})


class ParetoASHA(InOrder, RungStops):
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
        record=None,
    ):
        """`front_goes_on`: a trial on the first front of its rung goes on even outside the best 1/reduction."""
        InOrder.__init__(self)
        RungStops.__init__(self, grace_period, reduction_factor, max_t, time_attr, record)
        self.objectives, self.front_goes_on = objectives, front_goes_on
        self.owed_stops = rebuild(self, list(history), objectives[0].name, max_t)

    def set_search_properties(self, metric, mode, **spec) -> bool:
        return True  # the objectives are the scheduler's own

    def point_of(self, values: dict) -> tuple[float, ...] | None:
        """The objectives' values of one epoch, every one minimised; None when one is missing."""
        point = [values.get(o.name) for o in self.objectives]
        if any(not isinstance(v, (int, float)) or not math.isfinite(v) for v in point):
            return None
        return as_minimised(point, [o.mode for o in self.objectives])

    def verdict(self, trial_id: str, milestone: float) -> str:
        """Whether the trial goes on from rung `milestone`: among the best ceil(n / reduction) of the n trials there, or
        on their Pareto front (none of them better in every objective: as ASHA lets the best go on)."""
        recorded = dict(self.rungs)[milestone]
        ids = list(recorded)
        points = [recorded[i] for i in ids]
        here = ids.index(trial_id)
        keep = math.ceil(len(ids) / self.reduction)
        on_front = self.front_goes_on and nondominated_ranks(points)[here] == 0
        if pareto_order(points).index(here) < keep or on_front:
            return TrialScheduler.CONTINUE
        return TrialScheduler.STOP

    def on_trial_result(self, tune_controller, trial, result: dict) -> str:
        trial_id, epoch = trial_key(trial), int(result.get(self.time_attr) or 0)
        if self.carry_out_owed_stop(trial_id, epoch):
            return TrialScheduler.STOP
        return self.decide(trial_id, epoch, result)

    def debug_string(self) -> str:
        return f"ParetoASHA: trials recorded at each rung: {self.rung_sizes()}"
