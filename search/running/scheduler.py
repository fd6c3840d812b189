"""ASHA as the search runs it: Tune's `ASHAScheduler`, keyed by the search's trial ids and taught by the study.

Tune names a trial anew in every session, and a trial that `resume` runs again must meet the rungs it already
passed as passed, so the scheduler keys its rungs by the search's id (`trial_key`). When a search resumes or
grows, its rungs are rebuilt from the study: every epoch each trial reported, in the order the trials were created,
through ASHA's own hooks (what a rung records does not depend on the order). No scheduler state is kept on disk: the
study is the record.

A decision a kill took with it is made again: a trial still running whose last recorded epoch is a rung may have
been killed between the study recording that epoch and Tune stopping the trial. ASHA's decision for that rung, as
the rebuilt rungs make it, is kept, and the trial, run again, is stopped when it reports that epoch (its rung
already holds its value, so ASHA itself would let it pass). A rung a trial had passed (it recorded later epochs)
stays passed.
"""

from __future__ import annotations

from dataclasses import dataclass

from optuna.trial import FrozenTrial, TrialState
from ray.tune.schedulers import ASHAScheduler

from search.running.study import INHERITED_ATTR, epoch_values, trial_id_of
from trainables.foundation.config import RunConfig
from trainables.foundation.trial_files import trial_key


@dataclass(frozen=True)
class _Named:
    """What ASHA reads of a trial: its id."""

    trial_id: str


class StudyASHA(ASHAScheduler):
    def __init__(self, *, history: list[FrozenTrial] = (), **asha):
        super().__init__(**asha)
        self._history = list(history)
        self.owed_stops: dict[str, int] = {}  # the search's id -> the rung epoch at which it is to be stopped

    def set_search_properties(self, metric, mode, **spec) -> bool:
        settled = super().set_search_properties(metric, mode, **spec)
        if settled and self._metric and self._history:
            self._learn(self._history)
            self._history = []
        return settled

    def _learn(self, trials: list[FrozenTrial]) -> None:
        for trial in sorted(trials, key=lambda t: t.number):
            named = _Named(trial_id_of(trial))
            super().on_trial_add(None, named)
            decision, last = None, 0
            for epoch, value in sorted(epoch_values(trial).items()):
                decision = super().on_trial_result(None, named, {self._time_attr: epoch, self._metric: value})
                last = epoch
            if trial.state != TrialState.RUNNING:
                super().on_trial_remove(None, named)
            elif decision == self.STOP and last > trial.user_attrs.get(INHERITED_ATTR, 0) and self._is_rung(last):
                self.owed_stops[named.trial_id] = last

    def _is_rung(self, epoch: int) -> bool:
        return any(epoch == milestone for bracket in self._brackets for milestone, _ in bracket._rungs)

    def on_trial_add(self, tune_controller, trial):
        super().on_trial_add(tune_controller, _Named(trial_key(trial)))

    def on_trial_result(self, tune_controller, trial, result):
        decision = super().on_trial_result(tune_controller, _Named(trial_key(trial)), result)
        owed = self.owed_stops.get(trial_key(trial))
        if owed is not None and int(result.get(self._time_attr) or 0) >= owed:
            del self.owed_stops[trial_key(trial)]
            return self.STOP
        return decision

    def on_trial_complete(self, tune_controller, trial, result):
        super().on_trial_complete(tune_controller, _Named(trial_key(trial)), result)

    def on_trial_remove(self, tune_controller, trial):
        super().on_trial_remove(tune_controller, _Named(trial_key(trial)))


def study_asha(config: RunConfig, history: list[FrozenTrial] = ()) -> StudyASHA:
    """ASHA as the search sets it up for `config` (whose grace is resolved); the Tuner gives it metric and mode."""
    return StudyASHA(
        time_attr="epoch",
        max_t=config.epochs,
        grace_period=config.grace,
        reduction_factor=config.reduction,
        history=history,
    )
