"""What a search's study holds of its trials, read: the attributes the search writes, each trial's epochs and its
other objectives' values, its ending (the state decides), and the questions the driver asks of the whole study.
Written by search.running.study.record's `StudyRecord`, the one writer. Optuna only: no Ray, no torch."""

from __future__ import annotations

from optuna.trial import FrozenTrial, TrialState

from search.running.study.endings import COMPLETED, FAILED, STATUSES, STOPPED_BY_BUDGET, STOPPED_EARLY, Ending
from trainables.foundation.repeats import seed_of

ID_ATTR, STATUS_ATTR, REASON_ATTR, SCORE_ATTR = "trial_id", "status", "reason", "score"
COSTS_ATTR = "costs"  # the other objectives' latest values, as studies written before they were kept per epoch
EPOCH_OTHERS_ATTR = "epoch_other_objectives"  # each epoch's values of the objectives other than the primary
RUNGS_ATTR = "rung_decisions"  # each rung the trial met: the epoch that met it -> the scheduler's "continue" or "stop"
OBJECTIVES_ATTR = "objectives"  # an ended trial's value of every objective, by name
EPOCHS_ATTR = "epoch_values"  # a multi-objective study's record of each epoch's primary value (see `epoch_values`)
CONTINUES_ATTR = "continues"  # an ended trial continued (a budget's by a later session, a promotion's within the
# search): the number it continues
PROMOTED_ATTR = "promoted_at"  # a continuation ASHA's promotion variant made: the rung epoch it was promoted at
INHERITED_ATTR = "inherited_epochs"  # the epochs a continuation took over from the trial it continues
SEARCH_ID_ATTR = "search_id"  # the study's: the search's identity wherever its folder moves
STARTUP_ATTR = "startup_trials"  # the sampler's random start, fixed when the search first ran (a grown one keeps it)
LATE_RANDOM_ATTR = "late_random"  # {"every", "after"} of search.running.proposals.late_random, fixed likewise
GOOD_SHARE_ATTR = "tpe_good_share"  # TPE's good group as a share of the trials (0: Optuna's own), fixed likewise
# The study's, set when it is created since the default stop rule became a trial count: a search that has it was not
# started under the former default epoch budget (search.running.growth), whatever budget its settings hold
COUNT_DEFAULT_ATTR = "default_stop_rule"
STATE_OF = {
    COMPLETED: TrialState.COMPLETE,
    STOPPED_EARLY: TrialState.PRUNED,
    STOPPED_BY_BUDGET: TrialState.PRUNED,
    FAILED: TrialState.FAIL,
}
PROPOSED = (TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)  # not WAITING (enqueued)


def epoch_values(trial: FrozenTrial) -> dict[int, float]:
    """Every epoch's value of the primary objective: the trial's intermediate values, or, in a multi-objective
    study (which Optuna's `Trial.report` refuses: docs/design.md, "Several objectives"), its `epoch_values`."""
    if trial.intermediate_values:
        return dict(trial.intermediate_values)
    return {int(epoch): value for epoch, value in trial.user_attrs.get(EPOCHS_ATTR, {}).items()}


def other_objectives_by_epoch(trial: FrozenTrial) -> dict[int, dict]:
    """Every epoch's values of the objectives other than the primary (a study written before they were kept per
    epoch holds only the latest, which then stand for every epoch)."""
    kept = trial.user_attrs.get(EPOCH_OTHERS_ATTR)
    if kept is not None:
        return {int(epoch): others for epoch, others in kept.items()}
    latest = trial.user_attrs.get(COSTS_ATTR, {})
    return {epoch: latest for epoch in epoch_values(trial)} if latest else {}


def rung_decisions(trial: FrozenTrial) -> dict[int, str]:
    """The scheduler's decision at each rung the trial met, by the epoch that met it, as written when it was made."""
    return {int(epoch): decision for epoch, decision in trial.user_attrs.get(RUNGS_ATTR, {}).items()}


def trial_id_of(trial: FrozenTrial) -> str | None:
    return trial.user_attrs.get(ID_ATTR)


def ending_in_study(trial: FrozenTrial) -> Ending | None:
    """How an ended trial ended, as the study holds it: the state decides, `status` only tells the two PRUNED endings
    apart. None for a trial still running, whatever its attributes say (a failed write of its end left them)."""
    if trial.state == TrialState.RUNNING:
        return None
    by_state = {TrialState.COMPLETE: COMPLETED, TrialState.PRUNED: STOPPED_EARLY}.get(trial.state, FAILED)
    status = trial.user_attrs.get(STATUS_ATTR)
    if status not in STATUSES or STATE_OF[status] != trial.state:
        status = by_state
    return Ending(status, trial.user_attrs.get(REASON_ATTR))


class Tally:
    """What the whole study answers of its proposed trials, kept by its one writer as it writes (StudyRecord): how
    many ended each way, which, the best score (and trial) and each trial's epochs. The same answers as a full scan
    (`StudyQueries`): among equal scores the earlier trial stands first, as the scan's `max` and `min` pick it."""

    def __init__(self, mode: str):
        self.mode, self.counts, self.ended = mode, dict.fromkeys(STATUSES, 0), set()
        self.statuses: dict[str, str] = {}  # an ended trial's id -> how it ended
        self.best: tuple[float, int, str] | None = None  # (score, number, trial id)
        self.epochs: dict[str, int] = {}

    @classmethod
    def of(cls, trials: list[FrozenTrial], mode: str) -> Tally:
        tally = cls(mode)
        for trial in trials:
            tally.epochs[trial_id_of(trial)] = max(epoch_values(trial), default=0)
            ending = ending_in_study(trial)
            if ending is not None:
                tally.ended_so(trial_id_of(trial), trial.number, ending.status, trial.user_attrs.get(SCORE_ATTR))
        return tally

    def ended_so(self, trial_id: str, number: int, status: str, score: float | None) -> None:
        self.counts[status] += 1
        self.ended.add(trial_id)
        self.statuses[trial_id] = status
        if score is None:
            return
        if self.best is None or (score > self.best[0] if self.mode == "max" else score < self.best[0]):
            self.best = (score, number, trial_id)
        elif score == self.best[0] and number < self.best[1]:
            self.best = (score, number, trial_id)

    def continued(self, trial_id: str) -> bool:
        """The ended trial runs again (a continuation stands for it, with its epochs); False when the tally must be
        taken anew: it was not ended here, or it held the best score, which another trial now holds."""
        status = self.statuses.pop(trial_id, None)
        if status is None or (self.best is not None and self.best[2] == trial_id):
            return False
        self.counts[status] -= 1
        self.ended.discard(trial_id)
        return True

    def epoch(self, trial_id: str, epoch: int) -> None:
        self.epochs[trial_id] = max(self.epochs.get(trial_id, 0), epoch)

    def best_pair(self) -> tuple[float, str] | None:
        return None if self.best is None else (self.best[0], self.best[2])


class StudyQueries:
    """What the driver asks of the study as a whole. A reader's (`StudyQueries(study)`) answers what needs the study
    alone (`proposed` and what follows from it); the record's also needs `numbers` (trial id -> number),
    `constants`, `coding` and `mode`."""

    def __init__(self, study):
        self.study = study

    def frozen(self, trial_id: str) -> FrozenTrial | None:
        number = self.numbers.get(trial_id)
        return None if number is None else self.study.get_trials(deepcopy=False)[number]

    def ending(self, trial_id: str) -> Ending | None:
        frozen = self.frozen(trial_id)
        return None if frozen is None else ending_in_study(frozen)

    def configuration(self, frozen: FrozenTrial, seed: bool = True) -> dict:
        """The trial's whole configuration: what every trial shares, its own hyperparameters and (`seed`) its seed."""
        return {**self.constants, **self.coding.to_config(frozen.params), **(seed_of(frozen) if seed else {})}

    def config_of(self, trial_id: str) -> dict:
        return self.configuration(self.frozen(trial_id))

    def proposed(self) -> list[FrozenTrial]:
        """Every trial the search proposed, one per trial id: no `enqueue` configuration still waiting, no proposal
        a kill cut short before it was named; a continued trial (after a budget, or promoted), as its continuation."""
        trials = [t for t in self.study.get_trials(deepcopy=False, states=PROPOSED) if trial_id_of(t)]
        continued = {t.user_attrs[CONTINUES_ATTR] for t in trials if CONTINUES_ATTR in t.user_attrs}
        return [t for t in trials if t.number not in continued]

    def running(self) -> list[FrozenTrial]:
        return [t for t in self.proposed() if t.state == TrialState.RUNNING]

    def finished(self) -> int:
        return sum(1 for trial in self.proposed() if trial.state != TrialState.RUNNING)

    def ended_ids(self) -> set[str]:
        return {trial_id_of(t) for t in self.proposed() if t.state != TrialState.RUNNING}

    def stopped_by_budget(self) -> list[FrozenTrial]:
        """The trials a budget stopped (a grown search continues them), by their state and ending."""
        return [t for t in self.proposed() if (ending_in_study(t) or Ending("")).status == STOPPED_BY_BUDGET]

    def counts(self) -> dict[str, int]:
        """The search's ended trials by how they ended (search.running.study.endings)."""
        counts = dict.fromkeys(STATUSES, 0)
        for trial in self.proposed():
            ending = ending_in_study(trial)
            if ending is not None:
                counts[ending.status] += 1
        return counts

    def best(self) -> tuple[float, str] | None:
        """The best score of an ended trial, and its id."""
        scored = [
            (t.user_attrs[SCORE_ATTR], trial_id_of(t))
            for t in self.proposed()
            if t.state != TrialState.RUNNING and SCORE_ATTR in t.user_attrs
        ]
        pick = max if self.mode == "max" else min
        return pick(scored, key=lambda pair: pair[0]) if scored else None

    def epochs_spent(self) -> int:
        """Trial-epochs trained: every proposed trial's (a continuation's include those it took over, once)."""
        return sum(max(epoch_values(trial), default=0) for trial in self.proposed())
