"""Before a session starts: the study brought up to what a search's trials' own files know (after a kill they can
know more: docs/design.md, "Why nothing is lost when the driver is killed"), and the trials a budget stopped
continued, each as a new running trial of the study with the same id, configuration and history (Optuna never reopens
an ended trial). Optuna only: no Ray, no torch.
"""

from __future__ import annotations

import optuna
from optuna.trial import FrozenTrial, TrialState

from search.running.ends.decider import Decider
from search.running.study.endings import STATUSES, EndFacts, Ending
from search.running.study.queries import CONTINUES_ATTR, ID_ATTR, RUNGS_ATTR, trial_id_of
from search.running.study.record import StudyRecord
from trainables.foundation.errors import divergence_cause
from trainables.foundation.trial_files import TrialFiles, recorded_trial_ids

CUT_PROPOSAL = "never started: the driver was killed while proposing it"


def reconcile(decider: Decider) -> list[FrozenTrial]:
    """Bring the study up to the trials' files (epochs, ends, trials only the files know), every end through `decider`;
    returns the unended trials in the order they were created. A proposal a kill cut short before it was named fails."""
    record, experiment_dir = decider.record, decider.experiment_dir
    for frozen in record.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if not trial_id_of(frozen):
            decider.fail_unnamed(frozen.number, CUT_PROPOSAL)
    for trial_id in recorded_trial_ids(experiment_dir):
        if trial_id not in record.numbers:
            _add_from_files(record, trial_id, TrialFiles(experiment_dir, trial_id).rows())
    for frozen in record.running():
        trial_id = trial_id_of(frozen)
        files = TrialFiles(experiment_dir, trial_id)
        epochs_run = decider.take_epochs_from_files(trial_id)
        rows = files.rows()
        written = _ending_in_files(files.ending(), frozen)
        hp = record.configuration(frozen, seed=False)
        divergence = divergence_cause(rows[-1], hp) if rows and rows[-1].get("diverged") else None
        if written is not None or divergence or epochs_run >= record.epochs:
            decider.end(trial_id, EndFacts(epochs_run, divergence=divergence, written=written))
    return record.running()


def _ending_in_files(written: dict | None, frozen: FrozenTrial) -> Ending | None:
    """The ending a trial's `end.json` holds, unless it is older than the trial it would end (the budget's ending of
    a trial that a later session continues, or ASHA's pause of a trial it promoted)."""
    if not written or written.get("status") not in STATUSES:
        return None
    started = frozen.datetime_start.timestamp() if frozen.datetime_start else 0.0
    if CONTINUES_ATTR in frozen.user_attrs and float(written.get("at") or 0.0) < started:
        return None
    return Ending(written["status"], written.get("error"))


def _add_from_files(record: StudyRecord, trial_id: str, rows: list[dict]) -> None:
    """A trial the study does not know (its line lost with a URI's last upload, or older than the study): added running
    with the hyperparameters its rows name; its epochs follow, its rungs decided anew (their decisions were lost)."""
    config = dict(rows[0].get("config") or {}) if rows else {}
    params = record.coding.to_params(config)
    distributions = {name: record.coding.distributions[name] for name in params}
    added = optuna.trial.create_trial(
        state=TrialState.RUNNING,
        params=params,
        distributions=distributions,
        user_attrs={ID_ATTR: trial_id, RUNGS_ATTR: {}},
    )
    _add(record, trial_id, added, f"trial {trial_id} from its files")


def _add(record: StudyRecord, trial_id: str, trial: FrozenTrial, what: str) -> None:
    with record.writing(what):
        record.study.add_trial(trial)
    record.known(trial_id, record.study.get_trials(deepcopy=False)[-1])


def continue_stopped_by_budget(record: StudyRecord) -> list[FrozenTrial]:
    """Every trial a budget stopped (by its state and ending, search.running.study.queries), continued."""
    return [record.continue_trial(frozen) for frozen in record.stopped_by_budget()]
