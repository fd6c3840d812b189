"""A trial a budget stopped, continued by a later session of a grown search: Optuna never reopens an ended trial, so
the continuation is a new running trial of the study with the same id, configuration and history (epochs, their
other objectives, the rung decisions made), which stands for the stopped one from then on; it trains on from its latest
checkpoint. Optuna only: no Ray, no torch."""

from __future__ import annotations

import optuna
from optuna.trial import FrozenTrial, TrialState

from search.running.study import (
    CONTINUES_ATTR,
    COSTS_ATTR,
    EPOCH_OTHERS_ATTR,
    EPOCHS_ATTR,
    ID_ATTR,
    INHERITED_ATTR,
    RUNGS_ATTR,
    StudyRecord,
    epoch_values,
    trial_id_of,
)
from trainables.foundation.repeats import SEED_KEY

CARRIED = (EPOCHS_ATTR, EPOCH_OTHERS_ATTR, COSTS_ATTR, RUNGS_ATTR, SEED_KEY)  # the history a continuation takes over


def continue_stopped_by_budget(record: StudyRecord) -> list[FrozenTrial]:
    """Every trial a budget stopped (by its state and ending, search.running.study_trials), continued."""
    stopped = record.stopped_by_budget()
    for frozen in stopped:
        continuation = optuna.trial.create_trial(
            state=TrialState.RUNNING,
            params=frozen.params,
            distributions=frozen.distributions,
            intermediate_values=frozen.intermediate_values,
            user_attrs={
                ID_ATTR: trial_id_of(frozen),
                CONTINUES_ATTR: frozen.number,
                INHERITED_ATTR: max(epoch_values(frozen), default=0),
                **{key: frozen.user_attrs[key] for key in CARRIED if key in frozen.user_attrs},
            },
        )
        with record.writing(f"the continuation of trial {trial_id_of(frozen)}"):
            record.study.add_trial(continuation)
        record.numbers[trial_id_of(frozen)] = len(record.study.get_trials(deepcopy=False)) - 1
    return [record.frozen(trial_id_of(frozen)) for frozen in stopped]
