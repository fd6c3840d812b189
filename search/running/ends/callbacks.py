"""Tune callbacks that run in the search driver: how trials ended, TensorBoard events, tracking, uploads.

`TrialEnds` hands what Tune saw of a trial's end to the decider (search.running.ends.decider), which tells the others
(`FollowsEnds`) after the study holds it. Every hook is guarded (`Guarded`): an error in one is named and never reaches
Tune; a failed write of the study is not such an error, it stops the search.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import sys
from pathlib import Path

import ray.tune

from search.results.tensorboard import TrialEventWriter, written_epochs
from search.running.ends.decider import Decider
from search.running.ends.failures import plain_text, root_cause
from search.running.study.endings import STOPPED_EARLY, EndFacts, Ending
from search.running.study.queries import CONTINUES_ATTR, OBJECTIVES_ATTR, SCORE_ATTR, epoch_values
from search.running.study.record import StudyRecord, StudyWriteFailed
from search.running.writer.lock import LeaseLost
from trainables.foundation.errors import divergence_cause
from trainables.foundation.trial_files import TRIAL_DIR_PREFIX, TRIAL_KEY, trial_key
from trainables.foundation.trial_lease import TrialFenced
from trainables.ray_private import forget_ended_trials_statistics

HOOKS = ("setup", "on_trial_start", "on_trial_result", "on_trial_complete", "on_trial_error", "trial_ended")
HOOKS += ("on_experiment_end",)
log = logging.getLogger("ray.search")


def _guarded(method):
    @functools.wraps(method)
    def hook(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except LeaseLost:
            return None  # another driver took the search over: this one is stopping (search.running.writer.lock)
        except Exception as exc:  # noqa: BLE001 - a callback's failure must never reach Tune
            self.name_failure(method.__name__, exc)
            return None

    return hook


class Guarded(ray.tune.Callback):
    """A callback whose hooks never raise into Tune: the first failure of each callback is named on the terminal,
    every one in `search.log`."""

    what = "a callback"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in HOOKS:
            if name in cls.__dict__:
                setattr(cls, name, _guarded(cls.__dict__[name]))

    def name_failure(self, hook: str, exc: Exception) -> None:
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        log.error("%s failed in %s: %s", self.what, hook, reason, exc_info=exc)
        if not getattr(self, "_failure_named", False):
            self._failure_named = True
            print(
                f"warning: {self.what} failed ({reason}); the search goes on and no trial's ending changes "
                "(further failures of it: search.log)",
                file=sys.stderr,
                flush=True,
            )


class FollowsEnds(Guarded):
    """A callback told of each trial's end by `TrialEnds`, after the study holds it."""

    def trial_ended(self, trials, trial_id: str, ending: Ending, tune_trial=None) -> None:
        """`trials`: Tune's trials now; `tune_trial`: the ended one, when Tune had started it."""


class TrialEnds(Guarded):
    """The moment Tune ends a trial: what Tune saw handed to the decider. `stopped_by_scheduler(trial_id)`: whether
    the scheduler stopped the trial (None: not known)."""

    what = "recording a trial's end"

    def __init__(self, decider: Decider, epochs: int, stopped_by_scheduler=lambda trial_id: None):
        self.decider, self.epochs, self.stopped_by_scheduler = decider, epochs, stopped_by_scheduler
        self.trials: list = []  # Tune's trials, as it last passed them
        self.tune_trials: dict[str, object] = {}  # the search's id -> Tune's trial

    def __getstate__(self):  # Tune pickles its settings into tuner.pkl; the study lives in its own file
        return {"epochs": self.epochs, "decider": None, "stopped_by_scheduler": None, "trials": [], "tune_trials": {}}

    def on_trial_start(self, iteration, trials, trial, **info):
        self.trials, self.tune_trials[trial_key(trial)] = trials, trial

    def on_trial_complete(self, iteration, trials, trial, **info):
        stopped = self.stopped_by_scheduler(trial_key(trial))
        self._end(trials, trial, stopped_by_scheduler=stopped, divergence=_divergence(trial))

    def on_trial_error(self, iteration, trials, trial, **info):
        error = _error_text(trial)
        last_try = re.split(r"^Failure # \d+", error, flags=re.MULTILINE)[-1]  # Tune appends each try's error
        if TrialFenced.__name__ in last_try:  # its driver's lease was not its own to go by: unended, for `resume`
            self.trials = trials
            log.warning("trial %s stopped unended: %s", trial_key(trial), root_cause(error))
            return
        self._end(trials, trial, error_text=error, error=_divergence(trial) or root_cause(error))

    def out_of_budget(self, budget: str = "time") -> None:
        """A budget ran out (Tune stopped its trials without a callback): every trial still running ends so."""
        self.decider.end_running(budget, self.trials, self.tune_trials)

    def _end(self, trials, tune_trial, error_text: str | None = None, **facts) -> None:
        """What Tune saw of the trial's end (`facts`: EndFacts' own), with the epochs its last result reached;
        `error_text`: Tune's error file, plain."""
        self.trials = trials
        epochs_run = int((tune_trial.last_result or {}).get("epoch") or 0)
        seen = EndFacts(epochs_run, **facts)
        try:
            with contextlib.suppress(StudyWriteFailed, LeaseLost):  # kept by the record or the lease: the search stops
                self.decider.end(trial_key(tune_trial), seen, self.trials, tune_trial, error_text)
        finally:  # once the decider and its followers had the end, even if one raised: ~75 KB a trial less
            forget_ended_trials_statistics(tune_trial)


class Tracking(FollowsEnds):
    """The experiment tracker (search.running.tracking.tracker) as the trials go: each reported epoch, and each end."""

    what = "MLflow tracking"

    def __init__(self, tracker, record: StudyRecord):
        self.tracker, self.record = tracker, record

    def __getstate__(self):
        return {"tracker": None, "record": None}

    def on_trial_start(self, iteration, trials, trial, **info):
        frozen = self.record.frozen(trial_key(trial))
        if frozen is not None and CONTINUES_ATTR in frozen.user_attrs:  # resumed: its run ended before, runs again
            self.tracker.continued(trial_key(trial), hyperparameters(trial))

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if "epoch" in result:
            self.tracker.epoch(trial_key(trial), hyperparameters(trial))

    def trial_ended(self, trials, trial_id: str, ending: Ending, tune_trial=None) -> None:
        self.tracker.ended(self.record, trial_id, self.record.config_of(trial_id))


class TensorBoardEvents(FollowsEnds):
    """Writes each trial's TensorBoard events once (in the search driver, never once per worker; a recovered epoch
    only where its event files lack it), and at its end the HParams summary from the study."""

    what = "TensorBoard events"

    def __init__(self, record: StudyRecord, experiment_folder: Path):
        self.record, self.folder = record, Path(experiment_folder)
        self.writers: dict[str, TrialEventWriter] = {}
        self.written: dict[str, set[int]] = {}

    def __getstate__(self):
        return {**self.__dict__, "record": None, "writers": {}, "written": {}}

    def _writer(self, trial_id: str) -> TrialEventWriter:
        if trial_id not in self.writers:
            # The trial's folder in the experiment (for a URI: in its local working folder).
            folder = self.folder / f"{TRIAL_DIR_PREFIX}{trial_id}"
            self.writers[trial_id] = TrialEventWriter(folder, (self.record.metric,))
        return self.writers[trial_id]

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if "epoch" not in result:
            return
        trial_id = trial_key(trial)
        if result.get("recovered"):
            if trial_id not in self.written:
                self.written[trial_id] = written_epochs(self.folder / f"{TRIAL_DIR_PREFIX}{trial_id}")
            if int(result["epoch"]) in self.written[trial_id]:
                return
        self._writer(trial_id).epoch(result)

    def trial_ended(self, trials, trial_id: str, ending: Ending, tune_trial=None) -> None:
        frozen = self.record.frozen(trial_id)
        outcome = {
            f"best_{self.record.metric}": frozen.user_attrs.get(SCORE_ATTR),
            "epochs_run": max(epoch_values(frozen), default=0),
            "status": ending.status,
            "stopped_early": ending.status == STOPPED_EARLY,
            "objectives": frozen.user_attrs.get(OBJECTIVES_ATTR) or {},
        }
        writer = self._writer(trial_id)
        try:
            writer.end(self.record.config_of(trial_id), outcome)
        finally:
            writer.close()
            self.writers.pop(trial_id, None)
            self.written.pop(trial_id, None)  # a promoted trial replays its epochs again: read its files anew
        writer.keep_only_this_end()  # a promoted trial: its earlier end (at a pause) would be the one shown


class UploadOwnFiles(FollowsEnds):
    """For an experiment on a URI: after every trial, uploads this project's files (log, study) and that trial's
    TensorBoard events (closed by then: TensorBoardEvents comes first among the followers)."""

    what = "the upload to the experiment's URI"

    def __init__(self, experiment, list_files):
        self.experiment, self.list_files = experiment, list_files

    def trial_ended(self, trials, trial_id: str, ending: Ending, tune_trial=None) -> None:
        self.experiment.upload(self.list_files(self.experiment.local, f"{TRIAL_DIR_PREFIX}{trial_id}"))


def hyperparameters(trial) -> dict:
    return {name: value for name, value in trial.config.items() if name != TRIAL_KEY}


def _error_text(trial) -> str:
    """The trial's error as Tune wrote it, made plain text (its staging copy, before it reaches the experiment)."""
    return plain_text(trial.error_file)


def _divergence(trial) -> str | None:
    """Why a trial whose loss diverged failed (Tune may stop it at that epoch before its driver raises)."""
    last = trial.last_result or {}
    return divergence_cause(last, hyperparameters(trial)) if last.get("diverged") else None
