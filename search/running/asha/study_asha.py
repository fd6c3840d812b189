"""ASHA as the search runs it: Tune's asynchronous successive halving (as its one-bracket `ASHAScheduler` decides),
a scheduler of our own on Tune's public `FIFOScheduler` (search.running.asha.in_order), keyed by the search's trial
ids (Tune names a trial anew in every session) and rebuilt from the study (search.running.asha.rungs).
tests/test_study_asha.py holds it to Tune's own `ASHAScheduler`, live, event by event. With `promote` it is ASHA's
promotion variant instead (docs/design.md, "ASHA's promotion variant"): every trial pauses at a rung (stopped there,
its checkpoint kept) unless it is the one a free place would resume, and the search's searcher resumes
(`promotion`, `promoted`) the best paused one in the top 1/reduction of its rung before it proposes a new trial.
"""

from __future__ import annotations

from optuna.trial import FrozenTrial
from ray.tune.schedulers import TrialScheduler

from search.running.asha.in_order import InOrder
from search.running.asha.promotions import Promotions
from search.running.asha.rungs import RungStops, asha_cutoff, rebuild
from search.running.study.endings import COMPLETED, STOPPED_EARLY
from search.running.study.queries import ending_in_study, trial_id_of
from trainables.foundation.trial_files import trial_key

SIGN = {"max": 1.0, "min": -1.0}  # a point is the metric signed so that higher is better, as in Tune's ASHA


class StudyASHA(InOrder, RungStops):
    def __init__(
        self,
        *,
        time_attr: str = "training_iteration",
        metric: str | None = None,
        mode: str | None = None,
        max_t: float = 100,
        grace_period: float = 1,
        reduction_factor: float = 4,
        history: list[FrozenTrial] = (),
        record=None,
        promote: bool = False,
    ):
        """Tune's `ASHAScheduler` settings (one bracket). `history`: the study's trials, to rebuild the rungs from once
        metric and mode are known. `promote`: ASHA's promotion variant, not Tune's stopping rule."""
        if not 0 < grace_period <= max_t or reduction_factor <= 1 or mode not in (None, *SIGN):
            raise ValueError(
                f"ASHA needs 0 < grace_period <= max_t, reduction_factor > 1 and mode min or max; got {grace_period}, "
                f"{max_t}, {reduction_factor}, {mode}"
            )
        InOrder.__init__(self)
        RungStops.__init__(self, grace_period, reduction_factor, max_t, time_attr, record)
        self.metric_name, self.mode, self.promote = metric, mode, promote
        self.promotions = Promotions([milestone for milestone, _ in self.rungs], reduction_factor, max_t)
        self._history = list(history)
        self._rebuild_when_settled()

    def __getstate__(self):
        return {**super().__getstate__(), "_history": []}

    @property
    def metric(self) -> str | None:  # what Tune checks every result for (TrialScheduler.metric)
        return self.metric_name

    def set_search_properties(self, metric, mode, **spec) -> bool:
        """The Tuner's metric and mode; refused (False) where the scheduler was given another already, as Tune's ASHA
        refuses (the driver gives them first, so that the rungs are rebuilt before Tune runs: search.running.tuner)."""
        if (self.metric_name and metric and metric != self.metric_name) or (self.mode and mode and mode != self.mode):
            return False
        self.metric_name, self.mode = metric or self.metric_name, mode or self.mode
        self._rebuild_when_settled()
        return True

    def _rebuild_when_settled(self) -> None:
        if self.metric_name and self.mode in SIGN and self._history:
            ended = {trial_id_of(trial): ending_in_study(trial) for trial in self._history} if self.promote else {}
            paused = {trial_id for trial_id, ending in ended.items() if ending and ending.status == STOPPED_EARLY}
            self.owed_stops = rebuild(self, self._history, self.metric_name, self.max_t, lambda: self.wait(paused))
            self._history = []
            self.wait(set(self.owed_stops) if self.promote else set())  # once carried out, each waits at its rung

    def wait(self, trial_ids: set[str]) -> None:
        """The trials wait at their last rung, stopped by this scheduler (with `promote`: after a resume)."""
        for trial_id in trial_ids:
            self.stopped.add(trial_id)
            self.promotions.pause(trial_id)  # at its last rung

    def point_of(self, values: dict) -> float | None:
        value = values.get(self.metric_name)
        return None if value is None else SIGN[self.mode] * value

    def verdict(self, trial_id: str, milestone: float) -> str:
        """Tune's decision for the trial's value at `milestone` against every other value recorded there; with
        `promote`, it goes on only if a free place would resume it first (else it pauses)."""
        if self.promote:
            self.promotions.pause(trial_id, milestone)
            first = self.promotions.first(lambda other: other == trial_id or self.resumable(other))
            if first != trial_id:
                return TrialScheduler.STOP
            self.promotions.resume(trial_id)
            return TrialScheduler.CONTINUE
        recorded = dict(self.rungs)[milestone]
        ids, values = list(recorded), list(recorded.values())  # copied in C: a rung holds up to every trial
        mine = ids.index(trial_id)
        cutoff = asha_cutoff(values[:mine] + values[mine + 1 :], self.reduction)
        return TrialScheduler.STOP if cutoff is not None and recorded[trial_id] < cutoff else TrialScheduler.CONTINUE

    def resumable(self, trial_id: str) -> bool:
        """Whether a trial waiting at a rung can be resumed: its pause is ended in the study (none in the replays)."""
        ending = None if self.record is None else self.record.ending(trial_id)
        return self.record is None or (ending is not None and ending.status == STOPPED_EARLY)

    def promotion(self) -> str | None:
        """With `promote`: the paused trial a free place resumes now; None: a new trial."""
        return self.promotions.first(self.resumable) if self.promote else None

    def last_promotion(self) -> str | None:
        """With `promote`, asked once no new trial will start and none runs: the best paused trial of the highest rung
        any waits at, while no trial of the search has trained its last epoch, so that a search of few trials (whose
        top rungs hold no top 1/reduction) ends with its best trained to the end; None: one has, or none waits."""
        if not self.promote or self.record is None or self.record.counts()[COMPLETED]:
            return None
        return self.promotions.best_waiting(self.resumable)

    def promoted(self, trial_id: str) -> int:
        """The searcher resumes the paused trial: it runs on, no longer stopped by this scheduler; returns the epoch
        that met the rung it waited at (the one its rung decision is written under)."""
        self.stopped.discard(trial_id)
        return self.promotions.resume(trial_id)

    def record_value(self, trial_id: str, epoch, values: dict) -> float | None:
        milestone = super().record_value(trial_id, epoch, values)
        if milestone is not None and self.promote:
            self.promotions.arrived(trial_id, milestone, self.point_of(values), self.order_of(trial_id), int(epoch))
        return milestone

    def order_of(self, trial_id: str) -> int | None:
        """The trial's place among the search's proposals (None without a study: its arrival decides)."""
        return None if self.record is None else self.record.first_numbers.get(trial_id)

    def on_trial_add(self, tune_controller, trial):
        if not self.metric_name or self.mode not in SIGN:
            raise ValueError(
                f"StudyASHA has no metric ({self.metric_name}) or mode ({self.mode}): give them to the scheduler or "
                "to tune.TuneConfig()"
            )
        super().on_trial_add(tune_controller, trial)

    def on_trial_result(self, tune_controller, trial, result: dict) -> str:
        trial_id, epoch = trial_key(trial), result.get(self.time_attr)
        if self.carry_out_owed_stop(trial_id, epoch):
            return TrialScheduler.STOP
        if epoch is None or self.metric_name not in result:
            return TrialScheduler.CONTINUE
        if epoch >= self.max_t:
            return TrialScheduler.STOP  # it has trained its epochs (Tune's stop_last_trials): no decision
        return self.decide(trial_id, epoch, result)

    def on_trial_complete(self, tune_controller, trial, result: dict | None):
        super().on_trial_complete(tune_controller, trial, result)
        result = result or {}
        epoch = result.get(self.time_attr)
        if epoch is not None and self.metric_name in result:
            self.record_value(trial_key(trial), epoch, result)

    def debug_string(self) -> str:
        return f"StudyASHA: trials recorded at each rung: {self.rung_sizes()}"
