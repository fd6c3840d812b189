"""Which trial Tune starts next, chosen as Tune's `FIFOScheduler` chooses it (the first pending trial in the order
Tune added them, else the first paused one) among the trials not yet ended alone: Tune's own walks every trial the
search ever had at each choice, a cost that grows with the search (docs/design.md, "Many trials"). Tune's public
scheduler hooks tell it of each trial added (again, at the end, when Tune requeues a failed one) and ended.
tests/test_in_order.py holds it to Tune's `FIFOScheduler`, choice by choice. No Optuna.
"""

from __future__ import annotations

from ray.tune.experiment import Trial
from ray.tune.schedulers import FIFOScheduler


class InOrder(FIFOScheduler):
    def __init__(self):
        super().__init__()
        self.unended: dict[int, object] = {}  # id -> Tune's trial not yet ended, in the order Tune (re)added them

    def __getstate__(self):  # Tune pickles its settings into tuner.pkl: no trial goes with them
        before = getattr(super(), "__getstate__", None)  # the schedulers' own (RungStops'); Python 3.10: none
        return {**(before() if before else self.__dict__), "unended": {}}

    def on_trial_add(self, tune_controller, trial):
        self.unended.pop(id(trial), None)  # a requeued trial goes last, as Tune moves it to the end of its list
        self.unended[id(trial)] = trial

    def on_trial_error(self, tune_controller, trial):
        self.unended.pop(id(trial), None)

    def on_trial_complete(self, tune_controller, trial, result):
        self.unended.pop(id(trial), None)

    def on_trial_remove(self, tune_controller, trial):
        self.unended.pop(id(trial), None)

    def choose_trial_to_run(self, tune_controller) -> Trial | None:
        for status in (Trial.PENDING, Trial.PAUSED):
            for trial in self.unended.values():
                if trial.status == status:
                    return trial
        return None
