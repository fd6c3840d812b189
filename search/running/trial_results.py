"""Every trial of a search as the summary sees it: the study's trials (ids, hyperparameters, how they ended: the
study decides) with the epochs their own files hold."""

from __future__ import annotations

import math

from search.results.summary import CHECKPOINT_KEY, TrialResult
from search.running.study import StudyRecord, ending_in_study, trial_id_of
from trainables.foundation.repeats import seed_of
from trainables.foundation.storage import Experiment, relative_checkpoint
from trainables.foundation.trial_files import TrialFiles

# Keys Tune adds to every result, and the trial's own bookkeeping: the summary keeps what the training loop reported.
_BOOKKEEPING = {
    "timestamp",
    "done",
    "training_iteration",
    "trial_id",
    "date",
    "time_this_iter_s",
    "pid",
    "hostname",
    "node_ip",
    "time_since_restore",
    "iterations_since_restore",
    "checkpoint_dir_name",
    "should_checkpoint",
    "config",
    "recovered",
}


def trial_results(record: StudyRecord, experiment: Experiment, storage: str) -> list[TrialResult]:
    results = []
    for trial in record.proposed():
        trial_id = trial_id_of(trial)
        ending = ending_in_study(trial)
        results.append(
            TrialResult(
                trial_id=trial_id,
                config={**record.constants, **record.coding.to_config(trial.params), **seed_of(trial)},
                history=[_clean_row(row, storage) for row in TrialFiles(experiment.location, trial_id).rows()],
                status=ending.status if ending else "running",
                reason=ending.reason if ending else None,
            )
        )
    return results


def _clean_row(row: dict, storage: str) -> dict:
    cleaned = {}
    for key, value in row.items():
        if key in _BOOKKEEPING or key.startswith("config/"):
            continue
        if isinstance(value, float) and math.isnan(value):
            value = None
        elif hasattr(value, "item"):
            value = value.item()
        elif key == CHECKPOINT_KEY and isinstance(value, str):
            value = relative_checkpoint(value)  # relative to the experiment, which can move
        cleaned[key] = value
    return cleaned
