"""ASHA as the search runs it: Tune's `ASHAScheduler`, keyed by the search's trial ids and taught by the study.

Tune names a trial anew in every session, and a trial that `resume` runs again must meet the rungs it already
passed as passed, so the scheduler keys its rungs by the search's id (`trial_key`). Each decision at a rung is
written into the study before Tune acts on it. When a search resumes or grows, the rungs are rebuilt from the study
(search.running.rungs): no scheduler state is kept on disk, the study is the record. A decision a kill took with it
is carried out: the trial, run again, is stopped when it reports that epoch (`owed_stops`).
"""

from __future__ import annotations

from dataclasses import dataclass

from optuna.trial import FrozenTrial
from ray.tune.schedulers import ASHAScheduler

from search.running.rungs import STOP, RungStops, note_decision, rebuild, rung_met
from trainables.foundation.config import RunConfig
from trainables.foundation.trial_files import trial_key


@dataclass(frozen=True)
class _Named:
    """What ASHA reads of a trial: its id."""

    trial_id: str


class StudyASHA(ASHAScheduler, RungStops):
    def __init__(self, *, history: list[FrozenTrial] = (), record=None, **asha):
        """`history`: the study's trials, to rebuild the rungs from; `record`: the study's `StudyRecord`, told of
        each rung decision (None: decisions are not written, as in the replays)."""
        ASHAScheduler.__init__(self, **asha)
        RungStops.__init__(self)
        self._history, self.record = list(history), record

    def __getstate__(self):  # Tune pickles its settings into tuner.pkl; the study lives in its own file
        return {**self.__dict__, "record": None, "_history": []}

    @property
    def rungs(self) -> list[tuple[float, dict]]:
        return self._brackets[0]._rungs

    def point_of(self, values: dict) -> float | None:
        value = values.get(self._metric)
        return None if value is None else self._metric_op * value

    def verdict(self, trial_id: str, milestone: float) -> str:
        """Tune's decision for the trial's value at `milestone` against every other value recorded there."""
        recorded = dict(self.rungs)[milestone]
        others = {other: value for other, value in recorded.items() if other != trial_id}
        cutoff = self._brackets[0].cutoff(others)
        return STOP if cutoff is not None and recorded[trial_id] < cutoff else self.CONTINUE

    def set_search_properties(self, metric, mode, **spec) -> bool:
        settled = super().set_search_properties(metric, mode, **spec)
        if settled and self._metric and self._history:
            self.owed_stops = rebuild(self, self._history, self._metric, self._max_t)
            self._history = []
        return settled

    def on_trial_add(self, tune_controller, trial):
        super().on_trial_add(tune_controller, _Named(trial_key(trial)))

    def on_trial_result(self, tune_controller, trial, result):
        trial_id, epoch = trial_key(trial), result.get(self._time_attr)
        if self.carry_out_owed_stop(trial_id, epoch):
            return self.STOP
        met = None
        if epoch is not None and result.get(self._metric) is not None and epoch < self._max_t:
            met = rung_met(self.rungs, trial_id, epoch)
        decision = super().on_trial_result(tune_controller, _Named(trial_id), result)
        if met is not None:
            note_decision(self.record, trial_id, epoch, decision)
            if decision == self.STOP:
                self.stopped.add(trial_id)
        return decision

    def on_trial_complete(self, tune_controller, trial, result):
        super().on_trial_complete(tune_controller, _Named(trial_key(trial)), result)

    def on_trial_remove(self, tune_controller, trial):
        super().on_trial_remove(tune_controller, _Named(trial_key(trial)))


def study_asha(config: RunConfig, history: list[FrozenTrial] = (), record=None) -> StudyASHA:
    """ASHA as the search sets it up for `config` (whose grace is resolved); the Tuner gives it metric and mode."""
    return StudyASHA(
        time_attr="epoch",
        max_t=config.epochs,
        grace_period=config.grace,
        reduction_factor=config.reduction,
        history=history,
        record=record,
    )
