"""The record of a search: an Optuna study in the experiment folder (`study.log`, Optuna's `JournalStorage`), which
Optuna and optuna-dashboard open as is, written by the search driver alone (docs/design.md, "Where each kind of state
lives"). A trial's end is written state last, so a trial whose end could not be written all through is still RUNNING;
a write that fails is kept as the record's `failure`, after which nothing more is written and the driver stops the
search. Optuna only: no Ray, no torch.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path

import optuna
from optuna.storages import BaseStorage, InMemoryStorage
from optuna.trial import FrozenTrial, TrialState

from search.results.score import is_finite_number, standing_row
from search.running.study.coding import SpaceCoding
from search.running.study.endings import EndFacts, Ending, decide
from search.running.study.journal import open_study
from search.running.study.optuna_private import add_trial, prune_with_value, running_trial, storage_id
from search.running.study.queries import (
    CONTINUES_ATTR,
    COSTS_ATTR,
    EPOCH_OTHERS_ATTR,
    EPOCHS_ATTR,
    ID_ATTR,
    INHERITED_ATTR,
    OBJECTIVES_ATTR,
    PROMOTED_ATTR,
    REASON_ATTR,
    RUNGS_ATTR,
    SCORE_ATTR,
    STATE_OF,
    STATUS_ATTR,
    StudyQueries,
    Tally,
    epoch_values,
    other_objectives_by_epoch,
    rung_decisions,
    trial_id_of,
)
from trainables.foundation.errors import SearchFailed
from trainables.foundation.objectives import Objective
from trainables.foundation.repeats import SEED_KEY

log = logging.getLogger("ray.search")
CARRIED = (EPOCHS_ATTR, EPOCH_OTHERS_ATTR, COSTS_ATTR, RUNGS_ATTR, SEED_KEY)  # the history a continuation takes over


class StudyWriteFailed(SearchFailed):
    """A write to the study failed (a full disk, a storage error): the search stops, exit 1, every trial as the
    study held it."""

    def __init__(self, what: str, exc: BaseException):
        cause = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        super().__init__(
            f"the study could not be written ({what}: {cause}); the search stopped there and no trial's ending "
            "was recorded after it: every trial is as the study held it, and `resume` continues the search"
        )


class StudyRecord(StudyQueries):
    """Writes the search's trials into its study: created, each epoch, each rung decision, ended. `constants`: the
    configuration every trial shares (the space's constants and the fixed keys), which decides how a trial is
    scored."""

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
        """`objectives`: the primary (`metric`) first; the others come from the rows a trial reports."""
        super().__init__(study)
        self.storage, self.coding, self.constants = storage, coding, constants
        self.metric, self.mode, self.epochs = metric, mode, epochs
        self.objectives = objectives or [Objective(metric, mode)]
        self.other_names = [o.name for o in self.objectives[1:]]
        self.numbers: dict[str, int] = {}  # trial id -> number
        self.first_numbers: dict[str, int] = {}  # trial id -> the number it was proposed as (a continuation's first)
        self.storage_ids: dict[str, int] = {}  # trial id -> its id in the storage (one trial read alone: `frozen`)
        self.tally: Tally | None = None  # what the whole study answers, kept up to date by each write (`_tally`)
        self.promotions = 0  # continuations ASHA's promotion variant made: each took a number no proposal did
        for trial in study.get_trials(deepcopy=False):
            if trial_id_of(trial):
                self.known(trial_id_of(trial), trial)
            self.promotions += PROMOTED_ATTR in trial.user_attrs
        self.failure: StudyWriteFailed | None = None

    @classmethod
    def in_folder(
        cls, folder: Path, coding: SpaceCoding, objectives: list[Objective], epochs: int, constants: dict, sampler=None
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

    def known(self, trial_id: str, trial) -> None:
        """`trial` (a FrozenTrial, or a Trial asked for) is the one `trial_id` names from now on (a new trial, or a
        continuation standing for an ended trial: the tally follows, or is taken anew when it held the best)."""
        replaces = trial_id in self.numbers
        self.numbers[trial_id], self.storage_ids[trial_id] = trial.number, storage_id(trial)
        self.first_numbers.setdefault(trial_id, trial.number)  # its place among the proposals
        if replaces and self.tally is not None and not self.tally.continued(trial_id):
            self.tally = None

    def frozen(self, trial_id: str) -> FrozenTrial | None:
        """The trial `trial_id` names, read alone from the storage (its journal's new lines read first)."""
        found = self.storage_ids.get(trial_id)
        return None if found is None else self.storage.get_trial(found)

    def _tally(self) -> Tally:
        """The whole study's answers (counts, ended ids, the best, epochs spent): taken once from every trial, then
        kept up to date by this record's own writes (the one writer), so that each event costs the same at any size."""
        if self.tally is None:
            self.tally = Tally.of(self.proposed(), self.mode)
        return self.tally

    def counts(self) -> dict[str, int]:
        return dict(self._tally().counts)

    def ended_ids(self) -> set[str]:
        return self._tally().ended

    def finished(self) -> int:
        return len(self._tally().ended)

    def best(self) -> tuple[float, str] | None:
        return self._tally().best_pair()

    def epochs_spent(self) -> int:
        return sum(self._tally().epochs.values())

    @property
    def multi_objective(self) -> bool:
        return len(self.objectives) > 1

    def other_objectives_in(self, row: dict) -> dict:
        """The values of the objectives other than the primary that a reported row holds."""
        return {name: row[name] for name in self.other_names if is_finite_number(row.get(name))}

    @contextmanager
    def writing(self, what: str):
        """A guard around one write: its failure is kept as `failure` and raised; after one, nothing is written."""
        if self.failure is not None:
            raise self.failure
        try:
            yield
        except StudyWriteFailed:
            raise
        except Exception as exc:
            self.failure = StudyWriteFailed(what, exc)
            log.error("%s", self.failure, exc_info=exc)
            raise self.failure from exc

    def create(self, trial_id: str) -> optuna.Trial:
        """A new trial, proposed by the sampler (or the oldest configuration given with `enqueue`)."""
        with self.writing(f"proposing trial {trial_id}"):
            trial = self.study.ask(self.coding.distributions)
            trial.set_user_attr(ID_ATTR, trial_id)
            # its rung decisions are kept from the start (search.running.asha.rungs)
            trial.set_user_attr(RUNGS_ATTR, {})
        self.known(trial_id, trial)
        return trial

    def continue_trial(self, frozen: FrozenTrial, promoted_at: int | None = None) -> FrozenTrial:
        """The ended trial `frozen` continued: a new running trial with its id, configuration and history (Optuna
        never reopens an ended trial), standing for it from now on. `promoted_at`: the rung epoch ASHA's promotion
        variant continues it from, noted among its rung decisions."""
        trial_id = trial_id_of(frozen)
        carried = {key: frozen.user_attrs[key] for key in CARRIED if key in frozen.user_attrs}
        if promoted_at is not None:
            carried[RUNGS_ATTR] = {**carried.get(RUNGS_ATTR, {}), str(promoted_at): "promoted"}
            carried[PROMOTED_ATTR] = promoted_at
        continuation = optuna.trial.create_trial(
            state=TrialState.RUNNING,
            params=frozen.params,
            distributions=frozen.distributions,
            intermediate_values=frozen.intermediate_values,
            user_attrs={
                ID_ATTR: trial_id,
                CONTINUES_ATTR: frozen.number,
                INHERITED_ATTR: max(epoch_values(frozen), default=0),
                **carried,
            },
        )
        with self.writing(f"the continuation of trial {trial_id}"):
            added = add_trial(self.study, self.storage, continuation)
        self.known(trial_id, added)
        self.promotions += promoted_at is not None
        return added

    def live_trial(self, frozen: FrozenTrial) -> optuna.Trial:
        """The running trial `frozen`, to report to (also one an earlier session proposed: optuna_private)."""
        return running_trial(self.study, frozen)

    def report(self, trial_id: str, epoch, value, others: dict | None = None) -> None:
        """One epoch's metric as the trial's intermediate value (a multi-objective study's: the user attribute
        `epoch_values`), and `others`, the other objectives' values that epoch; an epoch already recorded is kept."""
        frozen = self.frozen(trial_id)
        if frozen is None or frozen.state != TrialState.RUNNING or not is_finite_number(value) or epoch is None:
            return
        epoch = int(epoch)
        recorded = epoch_values(frozen)
        if epoch in recorded:
            return
        with self.writing(f"epoch {epoch} of trial {trial_id}"):
            trial = self.live_trial(frozen)
            if others:
                kept = {str(e): o for e, o in sorted({**other_objectives_by_epoch(frozen), epoch: others}.items())}
                trial.set_user_attr(EPOCH_OTHERS_ATTR, kept)
            if self.multi_objective:
                trial.set_user_attr(EPOCHS_ATTR, {str(e): v for e, v in sorted({**recorded, epoch: value}.items())})
            else:
                trial.report(float(value), epoch)
        if self.tally is not None:
            self.tally.epoch(trial_id, epoch)

    def note_rung(self, trial_id: str, epoch: int, decision: str) -> None:
        """The scheduler's decision at the rung `epoch` met, written before Tune acts on it: a kill between the two
        leaves the decision, which `resume` carries out (search.running.asha.rungs)."""
        frozen = self.frozen(trial_id)
        if frozen is None or frozen.state != TrialState.RUNNING:
            return
        noted = {str(e): d for e, d in sorted({**rung_decisions(frozen), int(epoch): decision}.items())}
        with self.writing(f"the rung decision at epoch {epoch} of trial {trial_id}"):
            self.live_trial(frozen).set_user_attr(RUNGS_ATTR, noted)

    def standing(self, frozen: FrozenTrial) -> tuple[float | None, dict]:
        """The trial's score and the other objectives' values at the same epoch, the one that stands for it
        (search.results.score): the values the study, its front and `export` all take."""
        config = self.configuration(frozen, seed=False)
        rows = [{"epoch": epoch, "m": value} for epoch, value in epoch_values(frozen).items()]
        row = standing_row(rows, config, "m", self.mode)
        if row is None:
            return None, {}
        return float(row["m"]), other_objectives_by_epoch(frozen).get(int(row["epoch"]), {})

    def decide(self, trial_id: str, facts: EndFacts) -> Ending | None:
        """How the running trial ended, by the one rule (search.running.study.endings), from `facts` and what the study
        holds of it; None for a trial that is not running."""
        frozen = self.frozen(trial_id)
        if frozen is None or frozen.state != TrialState.RUNNING:
            return None
        score, others = self.standing(frozen)
        return decide(facts, self.epochs, score, [name for name in self.other_names if name not in others])

    def write_end(self, trial_id: str, ending: Ending) -> None:
        """Writes the decided `ending` of the running trial: its attributes first, the state (and values) last."""
        frozen = self.frozen(trial_id)
        score, others = self.standing(frozen)
        state = STATE_OF[ending.status]
        values = [score, *(others.get(name) for name in self.other_names)]
        with self.writing(f"the end of trial {trial_id}"):
            trial = self.live_trial(frozen)
            if score is not None:
                trial.set_user_attr(SCORE_ATTR, score)
            trial.set_user_attr(STATUS_ATTR, ending.status)
            if ending.reason:
                trial.set_user_attr(REASON_ATTR, ending.reason)
            if self.multi_objective:
                trial.set_user_attr(OBJECTIVES_ATTR, dict(zip([o.name for o in self.objectives], values)))
            if state == TrialState.PRUNED:  # Optuna's tell would give it its last epoch's value, not its standing one's
                one_value = None if self.multi_objective or score is None else [score]  # one value for several: none
                prune_with_value(self.study, self.storage, frozen, one_value)
            else:
                self.study.tell(frozen.number, values if state == TrialState.COMPLETE else None, state=state)
        if self.tally is not None:
            self.tally.ended_so(trial_id, frozen.number, ending.status, score)

    def fail_unnamed(self, number: int, reason: str) -> None:
        """A proposal a kill cut short before it was named (no trial id, never handed to Tune): failed with `reason`."""
        with self.writing(f"trial number {number}"):
            self.live_trial(self.study.get_trials(deepcopy=False)[number]).set_user_attr(REASON_ATTR, reason)
            self.study.tell(number, state=TrialState.FAIL)
