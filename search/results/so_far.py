"""The summary so far of a search that has not finished (still running, or interrupted): its trials that have ended,
from its study, read as optuna-dashboard reads it (never locked, never written), and from its trials' own files.
No Ray, no torch."""

from __future__ import annotations

import optuna

from search.results.summary import summarize
from trainables.foundation.config import RunConfig
from trainables.foundation.objectives import objectives_of
from trainables.foundation.space import load_run_space
from trainables.foundation.storage import STUDY_FILE, Experiment


def summary_so_far(experiment: Experiment) -> tuple[dict, int]:
    """(the summary of the trials that have ended, the number of trials that have not). `experiment`: its settings
    and study in its local folder (search.viewers downloads a URI's)."""
    from search.running.journal import STUDY_NAME, journal_storage
    from search.running.settings import read_settings
    from search.running.study import StudyRecord
    from search.running.study_setup import coding_for
    from search.running.trial_results import trial_results

    config = RunConfig.from_dict(read_settings(experiment.local)["run"])
    space = load_run_space(config)
    objectives = objectives_of(config, space)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = journal_storage(experiment.local / STUDY_FILE)  # a reader's: never trimmed, never unlocked
    study = optuna.load_study(study_name=STUDY_NAME, storage=storage)
    constants = {**space.constants, **config.fixed}
    primary = objectives[0]
    record = StudyRecord(
        study, storage, coding_for(config, space), primary.name, primary.mode, config.epochs, constants, objectives
    )
    results = trial_results(record, experiment, config.storage)
    ended = [result for result in results if result.status != "running"]
    named = [{"name": o.name, "mode": o.mode} for o in objectives]
    summary = summarize(
        space.name, space.metric, space.mode, config.to_dict(), ended, experiment.checkpoint_exists(), named
    )
    return summary, len(results) - len(ended)
