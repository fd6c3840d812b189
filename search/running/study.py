"""The record of a search: an Optuna study in the experiment folder, which Optuna and optuna-dashboard open as is.

`study.log` is Optuna's `JournalStorage` file: one JSON line per change, appended and fsynced by the search driver,
the only writer; readers (optuna-dashboard, `optuna.load_study`, `report`) never lock it. Each trial of the search
is one Optuna trial, with the project's trial id as its user attribute `trial_id`, every epoch it reported as an
intermediate value, and its end as `search.running.endings` decides it: the state (COMPLETE with its score
(`search.results.score`), PRUNED when ASHA or the time budget stopped it, FAIL), the user attribute `status` (which
of the four endings) and `reason`. The user attribute `score` holds the score of every ended trial (Optuna gives a
pruned trial its last epoch's value). The study is written first; every other account of an ending follows it.

One driver writes the study at a time (search.running.writer_lock); its journal's own lock and a line a killed
writer cut short are cleared only by a driver that holds that lock.

A trial's own files are written before Tune (and so the study) hears of an epoch, so after a kill they can know
more than the study: `search.running.reconcile` brings the study up to them before a session starts, and returns
the trials that had not ended, which the search proposes again with their own id and configuration.

Optuna only: no Ray, no torch.
"""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.storages import BaseStorage, InMemoryStorage
from optuna.trial import FrozenTrial, TrialState

from search.results.score import is_finite_number, score_of_values
from search.running.endings import (
    COMPLETED,
    FAILED,
    STATUSES,
    STOPPED_BY_BUDGET,
    STOPPED_EARLY,
    Ending,
    ending_of,
    with_score,
)
from search.running.journal import open_study
from search.running.space_coding import SpaceCoding
from trainables.foundation.objectives import Objective

ID_ATTR, STATUS_ATTR, REASON_ATTR, SCORE_ATTR = "trial_id", "status", "reason", "score"
COSTS_ATTR = "costs"  # the latest values of the objectives other than the primary (a multi-objective search)
OBJECTIVES_ATTR = "objectives"  # an ended trial's value of every objective, by name
EPOCHS_ATTR = "epoch_values"  # a multi-objective study's record of each epoch's primary value (see `epoch_values`)
CONTINUES_ATTR = "continues"  # a trial the budget stopped, continued by a later session: the number it continues
INHERITED_ATTR = "inherited_epochs"  # the epochs a continuation took over from the trial it continues
STARTUP_ATTR = "startup_trials"  # the sampler's random start, fixed when the search first ran (a grown one keeps it)
STATE_OF = {
    COMPLETED: TrialState.COMPLETE,
    STOPPED_EARLY: TrialState.PRUNED,
    STOPPED_BY_BUDGET: TrialState.PRUNED,
    FAILED: TrialState.FAIL,
}
PROPOSED = (TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)  # not WAITING (enqueued)


def epoch_values(trial: FrozenTrial) -> dict[int, float]:
    """Every epoch's value of the primary objective: the trial's intermediate values, or, in a multi-objective
    study, its user attribute `epoch_values`. Optuna takes intermediate values of one objective only (`Trial.report`
    refuses several) and its TPE ranks a pruned trial by them with the study's one direction, which a
    multi-objective study has not."""
    if trial.intermediate_values:
        return dict(trial.intermediate_values)
    return {int(epoch): value for epoch, value in trial.user_attrs.get(EPOCHS_ATTR, {}).items()}


def trial_id_of(trial: FrozenTrial) -> str | None:
    return trial.user_attrs.get(ID_ATTR)


def ending_in_study(trial: FrozenTrial) -> Ending | None:
    """How an ended trial ended, as the study holds it (a study written before the `status` attribute existed
    holds only the state); None for a trial still running."""
    if trial.state == TrialState.RUNNING:
        return None
    status = trial.user_attrs.get(STATUS_ATTR)
    if status not in STATUSES:
        status = {TrialState.COMPLETE: COMPLETED, TrialState.PRUNED: STOPPED_EARLY}.get(trial.state, FAILED)
    return Ending(status, trial.user_attrs.get(REASON_ATTR))


class StudyRecord:
    """Writes the search's trials into its study: created, each epoch, ended. `constants`: the configuration every
    trial shares (the space's constants and the fixed keys), which decides how a trial is scored."""

    def __init__(
        self,
        study: optuna.Study,
        storage: BaseStorage,
        coding: SpaceCoding,
        metric: str,
        mode: str,
        epochs: int,
        constants: dict,
        objectives: list[Objective] | None = None,
    ):
        """`storage`: the study's, through whose public API a running trial is found again by its number.
        `objectives`: the primary (`metric`) first; the others come from the rows a trial reports (costs)."""
        self.study, self.storage, self.coding, self.constants = study, storage, coding, constants
        self.study_id = storage.get_study_id_from_name(study.study_name)
        self.metric, self.mode, self.epochs = metric, mode, epochs
        self.objectives = objectives or [Objective(metric, mode)]
        self.cost_names = [o.name for o in self.objectives[1:]]
        self.numbers = {trial_id_of(t): t.number for t in study.get_trials(deepcopy=False) if trial_id_of(t)}

    @classmethod
    def in_folder(
        cls,
        folder: Path,
        coding: SpaceCoding,
        objectives: list[Objective],
        epochs: int,
        constants: dict,
        sampler=None,
    ) -> StudyRecord:
        """The record over the study in experiment folder `folder`, opened by its driver."""
        study, storage = open_study(folder, objectives, sampler)
        primary = objectives[0]
        return cls(study, storage, coding, primary.name, primary.mode, epochs, constants, objectives)

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
        objectives: list[Objective] | None = None,
    ) -> StudyRecord:
        """A record over a study in memory, for the sampler's benchmarks and tests."""
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        storage = InMemoryStorage()
        objectives = objectives or [Objective(metric, mode)]
        study = optuna.create_study(storage=storage, directions=[o.direction for o in objectives], sampler=sampler)
        coding = SpaceCoding(space, order_numbers)
        return cls(study, storage, coding, metric, mode, epochs, constants or {}, objectives)

    @property
    def multi_objective(self) -> bool:
        return len(self.objectives) > 1

    def costs_in(self, row: dict) -> dict:
        """The values of the objectives other than the primary that a reported row holds."""
        return {name: row[name] for name in self.cost_names if is_finite_number(row.get(name))}

    def create(self, trial_id: str) -> optuna.Trial:
        """A new trial, proposed by the sampler (or the oldest configuration given with `enqueue`)."""
        trial = self.study.ask(self.coding.distributions)
        trial.set_user_attr(ID_ATTR, trial_id)
        self.numbers[trial_id] = trial.number
        return trial

    def frozen(self, trial_id: str) -> FrozenTrial | None:
        number = self.numbers.get(trial_id)
        return None if number is None else self.study.get_trials(deepcopy=False)[number]

    def live_trial(self, number: int) -> optuna.Trial:
        """The running trial `number` of the study, to report to, through Optuna's public storage API."""
        trial_id = self.storage.get_trial_id_from_study_id_trial_number(self.study_id, number)
        return optuna.trial.Trial(self.study, trial_id)

    def report(self, trial_id: str, epoch, value, costs: dict | None = None) -> None:
        """One epoch's metric as the trial's intermediate value; an epoch already recorded is kept as it was.
        `costs`: the other objectives' values that epoch (the latest are kept, as the user attribute `costs`).
        A multi-objective study records it in the user attribute `epoch_values` (`epoch_values`)."""
        frozen = self.frozen(trial_id)
        if frozen is None or frozen.state != TrialState.RUNNING or not is_finite_number(value) or epoch is None:
            return
        if costs and frozen.user_attrs.get(COSTS_ATTR) != costs:
            self.live_trial(frozen.number).set_user_attr(COSTS_ATTR, costs)
        recorded = epoch_values(frozen)
        if int(epoch) in recorded:
            return
        if self.multi_objective:
            epochs = {str(e): v for e, v in sorted({**recorded, int(epoch): float(value)}.items())}
            self.live_trial(frozen.number).set_user_attr(EPOCHS_ATTR, epochs)
        else:
            self.live_trial(frozen.number).report(float(value), int(epoch))

    def end(self, trial_id: str, decided: Ending) -> Ending | None:
        """Writes how the trial ended, and returns the ending the study holds: the one decided here, or the one
        written before (an ended trial is final: a later account, e.g. a callback's failure after the trial
        completed, changes nothing). None for a trial the study does not know."""
        frozen = self.frozen(trial_id)
        if frozen is None or frozen.state != TrialState.RUNNING:
            return None if frozen is None else ending_in_study(frozen)
        value = self.score(frozen)
        ending = with_score(decided, value)
        costs = frozen.user_attrs.get(COSTS_ATTR, {})
        missing = [name for name in self.cost_names if name not in costs]
        if missing and ending.status == COMPLETED:  # a point of the front needs every objective
            ending = Ending(FAILED, f"reported no {', '.join(missing)}")
        trial = self.live_trial(frozen.number)
        if value is not None:
            trial.set_user_attr(SCORE_ATTR, value)
        trial.set_user_attr(STATUS_ATTR, ending.status)
        if ending.reason:
            trial.set_user_attr(REASON_ATTR, ending.reason)
        state = STATE_OF[ending.status]
        values = [value, *(costs.get(name) for name in self.cost_names)]
        if self.multi_objective:
            trial.set_user_attr(OBJECTIVES_ATTR, dict(zip([o.name for o in self.objectives], values)))
        if self.multi_objective and state == TrialState.PRUNED:  # Optuna would give it one value for several
            handle = self.storage.get_trial_id_from_study_id_trial_number(self.study_id, frozen.number)
            self.storage.set_trial_state_values(handle, TrialState.PRUNED)
        else:
            self.study.tell(frozen.number, values if state == TrialState.COMPLETE else None, state=state)
        return ending

    def ending(self, trial_id: str) -> Ending | None:
        frozen = self.frozen(trial_id)
        return None if frozen is None else ending_in_study(frozen)

    def score(self, frozen: FrozenTrial) -> float | None:
        config = {**self.constants, **self.coding.to_config(frozen.params)}
        return score_of_values(epoch_values(frozen), config, self.mode)

    def proposed(self) -> list[FrozenTrial]:
        """Every trial the search has proposed, one per trial id (a configuration given with `enqueue` waits until
        its turn; a proposal a kill cut short before it was named is no trial of the search; a trial the budget
        stopped that a later session continues is stood for by its continuation)."""
        trials = [t for t in self.study.get_trials(deepcopy=False, states=PROPOSED) if trial_id_of(t)]
        continued = {t.user_attrs[CONTINUES_ATTR] for t in trials if CONTINUES_ATTR in t.user_attrs}
        return [t for t in trials if t.number not in continued]

    def finished(self) -> int:
        return sum(1 for trial in self.proposed() if trial.state != TrialState.RUNNING)

    def ended_ids(self) -> set[str]:
        return {trial_id_of(t) for t in self.proposed() if t.state != TrialState.RUNNING}

    def config_of(self, trial_id: str) -> dict:
        """The trial's whole configuration: what every trial shares, and its own hyperparameters."""
        return {**self.constants, **self.coding.to_config(self.frozen(trial_id).params)}

    def counts(self) -> dict[str, int]:
        """The search's ended trials by how they ended (search.running.endings)."""
        counts = dict.fromkeys(STATUSES, 0)
        for trial in self.proposed():
            ending = ending_in_study(trial)
            if ending is not None:
                counts[ending.status] += 1
        return counts

    def best(self) -> tuple[float, str] | None:
        """The best score of an ended trial, and its id."""
        scored = [(t.user_attrs[SCORE_ATTR], trial_id_of(t)) for t in self.proposed() if SCORE_ATTR in t.user_attrs]
        pick = max if self.mode == "max" else min
        return pick(scored, key=lambda pair: pair[0]) if scored else None

    def running(self) -> list[FrozenTrial]:
        return [t for t in self.proposed() if t.state == TrialState.RUNNING]

    def continue_stopped_by_budget(self) -> list[FrozenTrial]:
        """Every trial a time budget stopped, continued: a new running trial of the study with the same id and
        configuration and epochs (Optuna never reopens an ended trial), which stands for it from now on. The trial
        trains on from its latest checkpoint."""
        stopped = [t for t in self.proposed() if t.user_attrs.get(STATUS_ATTR) == STOPPED_BY_BUDGET]
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
                    **{key: frozen.user_attrs[key] for key in (EPOCHS_ATTR, COSTS_ATTR) if key in frozen.user_attrs},
                },
            )
            self.study.add_trial(continuation)
            self.numbers[trial_id_of(frozen)] = len(self.study.get_trials(deepcopy=False)) - 1
        return [self.frozen(trial_id_of(frozen)) for frozen in stopped]

    def epochs_spent(self) -> int:
        """Trial-epochs the search has trained: every proposed trial's epochs (a continuation's include the ones it
        took over, once)."""
        return sum(max(epoch_values(trial), default=0) for trial in self.proposed())

    def end_stopped_by_budget(self, rows_of, budget: str = "time") -> list[tuple[str, Ending]]:
        """The time budget ran out: every trial still running (training, starting or waiting its turn) ended so,
        keeping its epochs and checkpoints. `rows_of(trial_id)`: the epochs its files hold, which can be more than
        Tune heard of before it stopped the trial: the study takes them first."""
        ends = []
        for frozen in self.running():
            trial_id = trial_id_of(frozen)
            rows = rows_of(trial_id)
            for row in rows:
                self.report(trial_id, row.get("epoch"), row.get(self.metric), self.costs_in(row))
            epochs_run = int(rows[-1]["epoch"]) if rows else 0
            ending = ending_of(epochs_run, self.epochs, out_of_time=True, budget=budget)
            ends.append((trial_id, self.end(trial_id, ending)))
        return ends
