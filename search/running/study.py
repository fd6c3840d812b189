"""The record of a search: an Optuna study in the experiment folder, which Optuna and optuna-dashboard open as is.

`study.log` is Optuna's `JournalStorage` file: one JSON line per change, appended and fsynced by the search driver,
the only writer; readers (optuna-dashboard, `optuna.load_study`, `report`) never lock it. Each trial of the search
is one Optuna trial, with the project's trial id as its user attribute `trial_id`, every epoch it reported as an
intermediate value, and its end: COMPLETE with its score (`search.results.score`), PRUNED when ASHA (or the time
budget) stopped it, FAIL with the reason as the attribute `reason`. The user attribute `score` holds the score of
every ended trial (Optuna gives a pruned trial its last epoch's value).

A trial's own files are written before Tune (and so the study) hears of an epoch, so after a kill they can know
more than the study: `reconcile` brings the study up to them before a search resumes, and returns the trials that
had not ended, which the search proposes again with their own id and configuration.

Optuna only: no Ray, no torch.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import optuna
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import FrozenTrial, TrialState

from search.results.score import is_finite_number, score_of_values
from trainables.foundation.errors import divergence_cause
from trainables.foundation.storage import STUDY_FILE
from trainables.foundation.trial_files import TrialFiles, recorded_trial_ids

STUDY_NAME = "search"
ID_ATTR, REASON_ATTR, SCORE_ATTR = "trial_id", "reason", "score"
STARTUP_ATTR = "startup_trials"  # the sampler's random start, fixed when the search first ran (a grown one keeps it)
LOCK_SUFFIX = ".lock"  # Optuna's lock beside the journal, held only during an append
ENDED = {"completed": TrialState.COMPLETE, "stopped_early": TrialState.PRUNED, "failed": TrialState.FAIL}
STATUS_OF = {state: status for status, state in ENDED.items()}
PROPOSED = (TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)  # not WAITING (enqueued)


def journal_storage(path: Path) -> JournalStorage:
    """The study's storage. A driver killed during an append can leave the last line cut short (Optuna skips it when
    reading, but the next append would land on it and leave a line no reader can parse) and Optuna's lock held
    (which the next writer would wait 30 s for): this driver is the only writer, so both are cleared first."""
    trim_partial_tail(path)
    Path(f"{path}{LOCK_SUFFIX}").unlink(missing_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return JournalStorage(JournalFileBackend(str(path)))


def trim_partial_tail(path: Path) -> None:
    if not path.is_file():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as file:
            file.truncate(data.rfind(b"\n") + 1)


def open_study(folder: Path, direction: str, sampler=None) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = journal_storage(folder / STUDY_FILE)
    return optuna.create_study(
        storage=storage, study_name=STUDY_NAME, direction=direction, sampler=sampler, load_if_exists=True
    )


def trial_id_of(trial: FrozenTrial) -> str | None:
    return trial.user_attrs.get(ID_ATTR)


class StudyRecord:
    """Writes the search's trials into its study: created, each epoch, ended. `constants`: the configuration every
    trial shares (the space's constants and the fixed keys), which decides how a trial is scored."""

    def __init__(self, study: optuna.Study, coding: SpaceCoding, metric: str, mode: str, epochs: int, constants: dict):
        self.study, self.coding, self.constants = study, coding, constants
        self.metric, self.mode, self.epochs = metric, mode, epochs
        self.numbers = {trial_id_of(t): t.number for t in study.get_trials(deepcopy=False) if trial_id_of(t)}

    @classmethod
    def in_memory(
        cls,
        space: dict,
        metric: str,
        mode: str,
        sampler,
        epochs: int,
        order_numbers: bool = True,
        constants: dict | None = None,
    ) -> StudyRecord:
        """A record over a study in memory, for the sampler's benchmarks and tests."""
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        study = optuna.create_study(direction="maximize" if mode == "max" else "minimize", sampler=sampler)
        return cls(study, SpaceCoding(space, order_numbers), metric, mode, epochs, constants or {})

    def create(self, trial_id: str) -> optuna.Trial:
        """A new trial, proposed by the sampler (or the oldest configuration given with `enqueue`)."""
        trial = self.study.ask(self.coding.distributions)
        trial.set_user_attr(ID_ATTR, trial_id)
        self.numbers[trial_id] = trial.number
        return trial

    def frozen(self, trial_id: str) -> FrozenTrial | None:
        number = self.numbers.get(trial_id)
        return None if number is None else self.study.get_trials(deepcopy=False)[number]

    def report(self, trial_id: str, epoch, value) -> None:
        """One epoch's metric as the trial's intermediate value; an epoch already recorded is kept as it was."""
        frozen = self.frozen(trial_id)
        if frozen is None or frozen.state != TrialState.RUNNING or not is_finite_number(value) or epoch is None:
            return
        if int(epoch) not in frozen.intermediate_values:
            optuna.trial.Trial(self.study, frozen._trial_id).report(float(value), int(epoch))

    def end(self, trial_id: str, status: str, reason: str | None = None) -> None:
        """How the trial ended (completed, stopped_early, failed); a trial that never started stays RUNNING, to be
        proposed again."""
        frozen = self.frozen(trial_id)
        if frozen is None or frozen.state != TrialState.RUNNING or status not in ENDED:
            return
        trial = optuna.trial.Trial(self.study, frozen._trial_id)
        value = self.score(frozen)
        if value is not None:
            trial.set_user_attr(SCORE_ATTR, value)
        state = TrialState.FAIL if value is None else ENDED[status]  # no finite epoch: nothing to rank it by
        if state == TrialState.FAIL:
            trial.set_user_attr(REASON_ATTR, reason or "no finite metric was reported")
        self.study.tell(frozen.number, value if state == TrialState.COMPLETE else None, state=state)

    def score(self, frozen: FrozenTrial) -> float | None:
        config = {**self.constants, **self.coding.to_config(frozen.params)}
        return score_of_values(frozen.intermediate_values, config, self.mode)

    def proposed(self) -> list[FrozenTrial]:
        """Every trial the search has proposed (a configuration given with `enqueue` waits until its turn; a
        proposal a kill cut short before it was named is no trial of the search)."""
        return [t for t in self.study.get_trials(deepcopy=False, states=PROPOSED) if trial_id_of(t)]

    def finished(self) -> int:
        return sum(1 for trial in self.proposed() if trial.state != TrialState.RUNNING)

    def earlier(self) -> dict:
        """What earlier sessions of the search ended with, for the live view: counts by status, and the best score."""
        counts = {"completed": 0, "stopped_early": 0, "failed": 0}
        best = None
        for trial in self.proposed():
            status = STATUS_OF.get(trial.state)
            if status is None:
                continue
            counts[status] += 1
            value = trial.user_attrs.get(SCORE_ATTR)
            if value is not None and (best is None or (value > best[0]) == (self.mode == "max")):
                best = (value, trial_id_of(trial))
        return {**counts, "best": best}

    def running(self) -> list[FrozenTrial]:
        return [t for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)) if trial_id_of(t)]

    def end_unstarted(self) -> None:
        """At the end of a search: a trial the time budget left unstarted is failed, saying so."""
        for frozen in self.running():
            self.end(trial_id_of(frozen), "failed", NOT_STARTED)


CUT_PROPOSAL = "never started: the driver was killed while proposing it"
NOT_STARTED = "not started: the time budget ran out before its turn"


def reconcile(record: StudyRecord, experiment_dir: str) -> list[FrozenTrial]:
    """Bring the study up to what the trials' files know (epochs recorded, ends, trials only the files know), and
    return the trials that had not ended, in the order they were created. A proposal a kill cut short (asked of
    the sampler, not yet named, so never handed to Tune) is failed with that reason: no trial is left RUNNING."""
    for frozen in record.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if not trial_id_of(frozen):
            optuna.trial.Trial(record.study, frozen._trial_id).set_user_attr(REASON_ATTR, CUT_PROPOSAL)
            record.study.tell(frozen.number, state=TrialState.FAIL)
    for trial_id in recorded_trial_ids(experiment_dir):
        if trial_id not in record.numbers:
            _add_from_files(record, trial_id, TrialFiles(experiment_dir, trial_id).rows())
    for frozen in record.running():
        trial_id = trial_id_of(frozen)
        files = TrialFiles(experiment_dir, trial_id)
        rows = files.rows()
        for row in rows:
            record.report(trial_id, row.get("epoch"), row.get(record.metric))
        ending = files.ending() or {}
        if ending.get("status") in ENDED:
            record.end(trial_id, ending["status"], ending.get("error"))
        elif rows and rows[-1].get("diverged"):
            hp = {**record.constants, **record.coding.to_config(frozen.params)}
            record.end(trial_id, "failed", divergence_cause(rows[-1], hp))
        elif rows and int(rows[-1].get("epoch", 0)) >= record.epochs:
            record.end(trial_id, "completed")
    return record.running()


def _add_from_files(record: StudyRecord, trial_id: str, rows: list[dict]) -> None:
    """A trial the study does not know (its line was lost with a URI's last upload, or the experiment predates the
    study): added as running, with the hyperparameters its rows name; the trial's epochs follow."""
    config = dict(rows[0].get("config") or {}) if rows else {}
    params = record.coding.to_params(config)
    distributions = {name: record.coding.distributions[name] for name in params}
    added = optuna.trial.create_trial(
        state=TrialState.RUNNING, params=params, distributions=distributions, user_attrs={ID_ATTR: trial_id}
    )
    record.study.add_trial(added)
    record.numbers[trial_id] = len(record.study.get_trials(deepcopy=False)) - 1


class SpaceCoding:
    """The searched hyperparameters as the study holds them. A categorical whose choices are all numbers (three or
    more) is given to the study as its position in the sorted choices (an IntDistribution): Optuna models a
    categorical's choices as unrelated, so after one good trial at batch 256 TPE keeps drawing 256 and rarely 128; as
    a position, a good 256 also makes 128 likelier. Random sampling is uniform either way and keeps the categorical."""

    def __init__(self, space: dict, order_numbers: bool = True):
        self.space = space
        self.ordered = ordered_choices(space) if order_numbers else {}
        self.distributions = {**space, **{name: IntDistribution(0, len(c) - 1) for name, c in self.ordered.items()}}

    def to_config(self, params: dict) -> dict:
        return {name: self.ordered[name][value] if name in self.ordered else value for name, value in params.items()}

    def to_params(self, config: dict) -> dict:
        """The study's values of a configuration's searched keys (other keys are left out)."""
        return {
            name: self.ordered[name].index(value) if name in self.ordered else value
            for name, value in config.items()
            if name in self.space
        }

    def refusal(self, config: dict) -> str | None:
        """Why a given configuration is not in the space (a key it does not search, a value outside its range)."""
        for name, value in config.items():
            if name not in self.space:
                return f"{name} is not searched (searched: {', '.join(self.space) or 'none'})"
            distribution = self.space[name]
            try:
                inside = distribution._contains(distribution.to_internal_repr(value))
            except (ValueError, TypeError):
                inside = False
            if not inside:
                return f"{name}={value} is outside the space ({distribution})"
        return None


def ordered_choices(space: dict) -> dict[str, list]:
    """The categoricals of three or more choices, all numbers, each with its choices sorted (two have no order that
    TPE could use)."""

    def orderable(distribution) -> bool:
        choices = distribution.choices if isinstance(distribution, CategoricalDistribution) else ()
        return len(choices) > 2 and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in choices)

    return {name: sorted(d.choices) for name, d in space.items() if orderable(d)}
