"""ASHA's rungs, as both of the search's schedulers meet them, decide at them and rebuild them from the study.

A rung is met as Tune's `AsyncHyperBandScheduler` meets it, each decision is written into the study before Tune acts
on it, and a resumed or grown search rebuilds the rungs from the study (`rebuild`), owing the stops a kill took with
it (docs/design.md, "How a trial ends"). Pure logic over Optuna's trials: no Ray.
"""

from __future__ import annotations

import contextlib

import numpy as np
from optuna.trial import FrozenTrial, TrialState

from search.running.study.queries import (
    RUNGS_ATTR,
    epoch_values,
    other_objectives_by_epoch,
    rung_decisions,
    trial_id_of,
)
from search.running.study.record import StudyWriteFailed

CONTINUE, STOP = "CONTINUE", "STOP"  # Tune's TrialScheduler.CONTINUE and .STOP


def milestones(grace: float, reduction: float, max_t: float) -> list[float]:
    """Rung milestones, highest first, as Tune's ASHA computes them (the last may be max_t: an end, not a rung)."""
    count = int(np.log(max_t / grace) / np.log(reduction) + 1)
    return [grace * reduction**k for k in reversed(range(count))]


def asha_cutoff(values, reduction: float) -> float | None:
    """Tune's ASHA cutoff at a rung: the (1 - 1/reduction) quantile of the values recorded there before (numpy's
    `nanpercentile`, linear between neighbours, NaN left out); a value below it stops. None for an empty rung."""
    values = list(values)
    return None if not values else np.nanpercentile(values, (1 - 1 / reduction) * 100)


def rung_met(rungs: list[tuple[float, dict]], trial_id: str, epoch: float) -> float | None:
    """The milestone `epoch` meets: the highest at or below it where the trial has no value yet (Tune's rule)."""
    for milestone, recorded in rungs:
        if epoch >= milestone and trial_id not in recorded:
            return milestone
    return None


def _decision_written(trial: FrozenTrial, epoch: int) -> str | None:
    """The decision the study holds for the rung `epoch` met; for a study from before decisions were kept, a rung
    followed by a later epoch was passed."""
    if RUNGS_ATTR in trial.user_attrs:
        return {"continue": CONTINUE, "promoted": CONTINUE, "stop": STOP}.get(rung_decisions(trial).get(epoch, ""))
    return CONTINUE if epoch < max(epoch_values(trial), default=0) else None


def rebuild(scheduler, trials: list[FrozenTrial], metric: str, max_t: float, settled=lambda: None) -> dict[str, int]:
    """Fills `scheduler`'s rungs (a `RungStops`) from every trial's history and returns the stops owed to running
    trials (trial id -> the epoch to stop at); nothing is decided at `max_t`. `settled()`: called once every value is
    recorded, before a decision a kill lost is made again."""
    arrivals = []
    for trial in sorted(trials, key=lambda t: t.number):
        trial_id, others = trial_id_of(trial), other_objectives_by_epoch(trial)
        for epoch, value in sorted(epoch_values(trial).items()):
            milestone = scheduler.record_value(trial_id, epoch, {**others.get(epoch, {}), metric: value})
            if milestone is not None:
                arrivals.append((trial, trial_id, epoch, milestone))
    settled()
    owed: dict[str, int] = {}
    for trial, trial_id, epoch, milestone in arrivals:
        if trial.state != TrialState.RUNNING or trial_id in owed or epoch >= max_t:
            continue
        decision = _decision_written(trial, epoch) or scheduler.verdict(trial_id, milestone)
        if decision == STOP:
            owed[trial_id] = epoch
    return owed


class RungStops:
    """What both schedulers share: their rungs, their decisions there (`decide`), the stops a kill left owed
    (`owed_stops`, from `rebuild`) and those they made (`stopped`, for the decider). `record`: the study's
    `StudyRecord`, told of each decision (None in the replays). A scheduler offers `point_of(values)` and
    `verdict(trial_id, milestone)`."""

    def __init__(self, grace: float, reduction: float, max_t: float, time_attr: str, record):
        self.rungs = [(milestone, {}) for milestone in milestones(grace, reduction, max_t)]
        self.reduction, self.max_t, self.time_attr, self.record = reduction, max_t, time_attr, record
        self.owed_stops: dict[str, int] = {}
        self.stopped: set[str] = set()

    def __getstate__(self):  # Tune pickles its settings into tuner.pkl; the study lives in its own file
        return {**self.__dict__, "record": None}

    def stopped_by_me(self, trial_id: str) -> bool:
        return trial_id in self.stopped

    def carry_out_owed_stop(self, trial_id: str, epoch) -> bool:
        """Whether the trial is to be stopped at `epoch` because a decision a kill took with it said so."""
        owed = self.owed_stops.get(trial_id)
        if owed is None or int(epoch or 0) < owed:
            return False
        del self.owed_stops[trial_id]
        self.stopped.add(trial_id)
        return True

    def decide(self, trial_id: str, epoch, values: dict) -> str:
        """Decides at the rung `epoch` meets (none, or `max_t`: it goes on), the decision written before Tune acts."""
        milestone = None if epoch >= self.max_t else self.record_value(trial_id, epoch, values)
        if milestone is None:
            return CONTINUE
        decision = self.verdict(trial_id, milestone)
        if self.record is not None:  # None in the replays; a failed write stays with the record, which stops the search
            with contextlib.suppress(StudyWriteFailed):
                self.record.note_rung(trial_id, int(epoch), "stop" if decision == STOP else "continue")
        if decision == STOP:
            self.stopped.add(trial_id)
        return decision

    def record_value(self, trial_id: str, epoch, values: dict) -> float | None:
        """Records the trial's point at the rung `epoch` meets, deciding nothing (Tune's ASHA does so with a trial's
        last result when it completes: at `max_t`, a rung a decision never met); returns that rung's milestone."""
        point = self.point_of(values)
        milestone = None if point is None else rung_met(self.rungs, trial_id, epoch)
        if milestone is not None:
            dict(self.rungs)[milestone][trial_id] = point
        return milestone

    def rung_sizes(self) -> str:
        return ", ".join(f"epoch {milestone:g}: {len(points)}" for milestone, points in reversed(self.rungs))
