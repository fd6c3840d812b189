"""The one place a trial's end is decided and recorded, as Optuna's `_tell` is for a study.

Every path that ends a trial (Tune's `TrialEnds` callback, a budget that ran out, `reconcile` after a kill) comes here
with what it knows (`EndFacts`). The decider decides by the one rule (search.running.study.endings), writes the study
once, and only after that write succeeded writes the trial's `end.json` and tells the followers; a write that fails
raises `StudyWriteFailed` and nothing follows it. Optuna and pyarrow only: no Ray, no torch.
"""

from __future__ import annotations

import logging

from search.running.study.endings import EndFacts, Ending
from search.running.study.queries import trial_id_of
from search.running.study.record import StudyRecord
from trainables.foundation.trial_files import TrialFiles

log = logging.getLogger("ray.search")


class Decider:
    """Ends the trials of one study. `followers`: told of each end, after the study and `end.json` hold it (each
    guards itself: search.running.ends.callbacks.FollowsEnds)."""

    def __init__(self, record: StudyRecord, experiment_dir: str | None, followers: list = ()):
        self.record, self.experiment_dir, self.followers = record, experiment_dir, list(followers)

    @classmethod
    def without_files(cls, record: StudyRecord) -> Decider:
        """The decider of a study whose trials keep no files: no `end.json` is written, and none is read."""
        return cls(record, None)

    def end(
        self, trial_id: str, facts: EndFacts, trials: list = (), tune_trial=None, error_text: str | None = None
    ) -> Ending | None:
        """Ends the running trial `trial_id` as `facts` say, and returns the ending the study holds (an ended trial
        is final: a later account changes nothing); None for a trial the study does not know. `error_text`: a failed
        trial's whole error, written into its folder before the followers name it."""
        ending = self.record.decide(trial_id, facts)
        if ending is None:
            before = self.record.ending(trial_id)
            if before is not None:
                log.info("trial %s ended %s before; a later account (%s) is not taken", trial_id, before, facts)
            return before
        self.record.write_end(trial_id, ending)  # raises StudyWriteFailed: then nothing follows
        if self.experiment_dir is not None:
            files = TrialFiles(self.experiment_dir, trial_id)
            files.write_ending(ending.status, ending.reason)
            if error_text and ending.failed:
                try:
                    files.write_error(error_text)
                except OSError as exc:  # a copy of what Tune writes too (with its snapshot): the end goes on
                    log.warning("trial %s: its error file could not be written (%s)", trial_id, exc)
        for follower in self.followers:
            follower.trial_ended(list(trials), trial_id, ending, tune_trial)
        return ending

    def end_running(self, budget: str, trials: list = (), tune_trials: dict | None = None) -> list[tuple[str, Ending]]:
        """A budget (`"time"` or `"epoch"`) ran out: every trial still running ends so, keeping its epochs and
        checkpoints; the epochs its files hold (more than Tune may have heard of) reach the study first."""
        ends = []
        for frozen in self.record.running():
            trial_id = trial_id_of(frozen)
            epochs_run = self.take_epochs_from_files(trial_id)
            facts = EndFacts(epochs_run, budget=budget)
            ends.append((trial_id, self.end(trial_id, facts, trials, (tune_trials or {}).get(trial_id))))
        return ends

    def take_epochs_from_files(self, trial_id: str) -> int:
        """Brings the study up to the epochs the trial's files hold; returns the last one (0: none)."""
        if self.experiment_dir is None:
            return 0
        rows = TrialFiles(self.experiment_dir, trial_id).rows()
        record = self.record
        for row in rows:
            record.report(trial_id, row.get("epoch"), row.get(record.metric), record.other_objectives_in(row))
        return int(rows[-1]["epoch"]) if rows else 0

    def fail_unnamed(self, number: int, reason: str) -> None:
        """A proposal a kill cut short before it was named: failed in the study, the one place that knows of it."""
        self.record.fail_unnamed(number, reason)
