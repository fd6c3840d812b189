"""Every trial of a search as the summary sees it: the study's trials (ids, hyperparameters, how they ended: the
study decides) with the epochs their own files hold; and the summary so far of a search that has not finished (still
running, or interrupted), from its study read as optuna-dashboard reads it (never locked, never written). No Ray, no
torch."""

from __future__ import annotations

import math

from search.results.summary import CHECKPOINT_KEY, TrialResult, summarize
from search.running.proposals.study_setup import held_coding
from search.running.settings import read_settings
from search.running.study.journal import read_study
from search.running.study.queries import ending_in_study, trial_id_of
from search.running.study.record import StudyRecord
from trainables.foundation.config import RunConfig
from trainables.foundation.objectives import objectives_of
from trainables.foundation.space import Space, load_run_space
from trainables.foundation.storage import STUDY_FILE, Experiment, relative_checkpoint
from trainables.foundation.trial_files import TrialFiles

# Keys Tune adds to every result, and the trial's own bookkeeping: the summary keeps what the training loop reported.
_BOOKKEEPING = set(
    "timestamp done training_iteration trial_id date time_this_iter_s pid hostname node_ip time_since_restore "
    "iterations_since_restore checkpoint_dir_name should_checkpoint config recovered".split()
)


def trial_results(record: StudyRecord, experiment: Experiment) -> list[TrialResult]:
    results = []
    for trial in record.proposed():
        trial_id = trial_id_of(trial)
        ending = ending_in_study(trial)
        results.append(
            TrialResult(
                trial_id=trial_id,
                config=record.configuration(trial),
                history=[_clean_row(row) for row in TrialFiles(experiment.location, trial_id).rows()],
                status=ending.status if ending else "running",
                reason=ending.reason if ending else None,
            )
        )
    return results


def _clean_row(row: dict) -> dict:
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


def summary_so_far(experiment: Experiment) -> tuple[dict, int]:
    """(the summary of the ended trials, the number not ended) of `experiment`, read from its local folder."""
    config = RunConfig.from_dict(read_settings(experiment.local)["run"])
    space = load_run_space(config)
    objectives = objectives_of(config, space)
    study, storage = read_study(experiment.local / STUDY_FILE)
    primary, constants = objectives[0], config.constants(space)
    coding = held_coding(config, space, study.get_trials(deepcopy=False))  # positions, in a study begun so
    record = StudyRecord(study, storage, coding, primary.name, primary.mode, config.epochs, constants, objectives)
    results = trial_results(record, experiment)
    ended = [result for result in results if result.status != "running"]
    return summary_of(config, space, experiment, record, ended), len(results) - len(ended)


def summary_of(config: RunConfig, space: Space, experiment: Experiment, record: StudyRecord, results: list) -> dict:
    """The summary of `results`, the trials of the search in `experiment` (search.results.summary)."""
    named = [{"name": o.name, "mode": o.mode} for o in record.objectives]
    return summarize(
        space.name, space.metric, space.mode, config.to_dict(), results, experiment.checkpoint_exists(), named
    )
