"""Optuna proposes the trials: the search's study (search.running.study.record) behind Ray Tune's public `Searcher` API.
How a trial ended is written by the driver's `TrialEnds` callback, which knows why a trial failed.
"""

from __future__ import annotations

import contextlib

from optuna.trial import FrozenTrial
from ray.tune.search import Searcher

from search.running.study.queries import trial_id_of
from search.running.study.record import StudyRecord, StudyWriteFailed
from trainables.foundation.repeats import SEED_KEY, seed_of
from trainables.foundation.trial_files import TRIAL_KEY

STEP_KEY = "epoch"


class StudySearcher(Searcher):
    """The search's study behind Tune's `Searcher` API: `suggest` proposes a trial (first those the search must run
    again), every reported epoch becomes an intermediate value (the one ASHA stops a trial at reaches
    `on_trial_complete` only). The study persists itself: Tune's own searcher snapshot is not written."""

    def __init__(
        self,
        record: StudyRecord,
        unended: list[FrozenTrial],
        metric: str,
        mode: str,
        seed: int = 0,
        promotions=None,
        new_trials: int | None = None,
    ):
        """`seed`: the run's. With nothing left to search (no searched key) every trial is a repeat of the one
        configuration with its own seed, kept in the study (trainables.foundation.repeats). `promotions`: the
        scheduler of ASHA's promotion variant, whose paused trials are resumed before a new one is proposed, and
        `new_trials`: how many new ones (Tune's trial count then counts every resumption too)."""
        super().__init__(metric=metric, mode=mode)
        self.record, self.promotions, self.new_left = record, promotions, new_trials
        self.live: dict[str, str] = {}  # Tune's id of a running trial -> the search's
        self.repeats_from = None if record.coding.space else seed
        self.unended = [  # proposed first; a repeat whose seed was not yet written gets the one its number gives
            (trial_id_of(trial), dict(trial.params), seed_of(trial) or self.repeat_seed(trial_id_of(trial)))
            for trial in unended
        ]

    def __getstate__(self):  # Tune pickles its settings into tuner.pkl; the study lives in its own file
        return {**self.__dict__, "record": None}

    def suggest(self, tune_id: str) -> dict | str:
        """The next trial's configuration; `Searcher.FINISHED` once the study cannot be written (the record keeps the
        failure, which stops the search with its one line: it never reaches Tune as a traceback)."""
        promoted = None if self.unended or self.promotions is None else self.promotions.promotion()
        if promoted is None and self.promotions is not None and self.new_left == 0 and not self.live:  # none starts
            promoted = self.promotions.last_promotion()  # the best paused one goes on while no trial has finished
        if self.unended:
            trial_id, params, seed = self.unended.pop(0)
        elif promoted is not None:
            rung = self.promotions.promoted(promoted)
            try:
                continued = self.record.continue_trial(self.record.frozen(promoted), promoted_at=rung)
            except StudyWriteFailed:
                return Searcher.FINISHED
            trial_id, params, seed = promoted, continued.params, seed_of(continued)
        elif self.new_left == 0:  # with promotions: no new trial, and none paused to resume yet
            return None if self.live else Searcher.FINISHED
        else:
            if self.new_left is not None:
                self.new_left -= 1
            trial_id, seed = tune_id, self.repeat_seed(tune_id)
            try:
                trial = self.record.create(tune_id)
                if seed:
                    with self.record.writing(f"the seed of trial {tune_id}"):
                        trial.set_user_attr(SEED_KEY, seed[SEED_KEY])
            except StudyWriteFailed:
                return Searcher.FINISHED
            params = trial.params
        self.live[tune_id] = trial_id
        return {TRIAL_KEY: trial_id, **self.record.coding.to_config(params), **seed}

    def repeat_seed(self, trial_id: str) -> dict:
        """{"seed": N} for a repeat of a search with nothing to search, else {}: the run's seed plus the trials
        proposed before it, for a new trial and for one a crash left without its seed written alike."""
        if self.repeats_from is None:
            return {}
        before = [trial_id_of(trial) for trial in self.record.proposed()]
        return {SEED_KEY: self.repeats_from + (before.index(trial_id) if trial_id in before else len(before))}

    def on_trial_result(self, tune_id: str, result: dict) -> None:
        self._report(self.live.get(tune_id), result)

    def on_trial_complete(self, tune_id: str, result: dict | None = None, error: bool = False) -> None:
        self._report(self.live.pop(tune_id, None), result or {})

    def _report(self, trial_id: str | None, result: dict) -> None:
        if trial_id is None:
            return
        with contextlib.suppress(StudyWriteFailed):  # kept by the record, which stops the search; never reaches Tune
            self.record.report(
                trial_id, result.get(STEP_KEY), result.get(self.metric), self.record.other_objectives_in(result)
            )

    def save_to_dir(self, checkpoint_dir: str, session_str: str = "default") -> None:
        """Nothing to save: every change is already in the study's journal."""
