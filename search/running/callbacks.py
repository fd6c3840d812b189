"""Tune callbacks that run in the search driver: live progress, how trials ended, TensorBoard events, uploads."""

from __future__ import annotations

import time
from pathlib import Path

import ray.tune

from search.results.score import anneals, is_finite_number
from search.results.summary import outcome
from search.results.tensorboard import TrialEventWriter, written_epochs
from search.running.failures import root_cause
from search.running.study import StudyRecord
from trainables.foundation.errors import divergence_cause
from trainables.foundation.trial_files import TRIAL_KEY, TrialFiles

RUNNING, TERMINATED, ERROR = "RUNNING", "TERMINATED", "ERROR"
WIDTH = 100  # the view fits a 100-column terminal


def _number(value) -> float | None:
    return value if is_finite_number(value) else None


def key(trial) -> str:
    """The search's id of a Tune trial (a trial run again by `resume` keeps it; Tune's own id is new each session)."""
    return trial.config.get(TRIAL_KEY, trial.trial_id)


def hyperparameters(trial) -> dict:
    return {name: value for name, value in trial.config.items() if name != TRIAL_KEY}


class TrialOutcomes:
    """Per-trial facts the callbacks share: epochs run, score, and whether the loss diverged."""

    def __init__(self, epochs: int, metric: str, mode: str):
        self.epochs, self.metric, self.mode = epochs, metric, mode

    def best(self, trial) -> float | None:
        """The trial's score so far (search.results.score): its last epoch's metric when its learning rate anneals,
        else its best epoch's."""
        analysis = trial.metric_analysis.get(self.metric, {})
        return _number(analysis.get("last" if anneals(trial.config) else self.mode))

    def epochs_run(self, trial) -> int:
        return int((trial.last_result or {}).get("epoch") or 0)

    def status(self, trial, ended: bool = False) -> str:
        """`ended`: the trial this callback is about (Tune calls back before it marks the trial TERMINATED)."""
        if trial.status == TERMINATED or ended or trial.status == ERROR:
            diverged = bool((trial.last_result or {}).get("diverged"))
            return outcome(trial.status == ERROR or diverged, self.epochs_run(trial), self.epochs)
        return trial.status.lower()


class ProgressView(ray.tune.Callback):
    """A compact log (under 100 columns) that grows by what is new: on every reported epoch, that trial's epoch,
    metric and images/s; at every trial's end, how it ended; after either, one status line (counts of running,
    starting, finished, stopped early and failed trials, the best so far, elapsed time and, once a trial has
    finished, an estimate of the time left). Each line is printed once, so a log file reads like the terminal."""

    def __init__(self, outcomes: TrialOutcomes, total_trials: int, concurrency: int, earlier: dict | None = None):
        """`earlier`: what the search's earlier sessions ended with (search.running.study.StudyRecord.earlier)."""
        self.outcomes, self.total, self.concurrency = outcomes, total_trials, concurrency
        self.earlier = earlier or {"completed": 0, "stopped_early": 0, "failed": 0, "best": None}
        self.start = time.monotonic()
        self._eta_done, self._eta_at, self._eta_left = 0, 0.0, 0.0  # as of the last trial end (see `_eta`)

    def __getstate__(self):
        return {**self.__dict__, "start": None}

    def setup(self, **info):
        self.start = time.monotonic()

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self._show(trials, latest={key(trial): result})  # Tune stores `result` in the trial after this call

    def on_trial_complete(self, iteration, trials, trial, **info):
        diverged = _divergence(trial)  # stopped by Tune at the epoch its loss diverged, before its driver raised
        event = f"failed: {diverged}" if diverged else f"finished: {self.outcomes.status(trial, ended=True)}"
        self._show(trials, f"trial {key(trial)} {event}", ended=trial)

    def on_trial_error(self, iteration, trials, trial, **info):
        cause = root_cause(_error_text(trial))
        self._show(trials, f"trial {key(trial)} failed: {cause}\n  see {trial.path}/error.txt", ended=trial)

    def _show(self, trials, event: str | None = None, latest: dict | None = None, ended=None) -> None:
        lines = self.render(trials, time.monotonic() - self.start, event, latest or {}, ended)
        print("\n".join(lines), flush=True)

    def render(self, trials, elapsed: float, event=None, latest: dict | None = None, ended=None) -> list[str]:
        o, latest = self.outcomes, latest or {}
        statuses = [o.status(t, ended=t is ended) for t in trials]
        statuses += [status for status in ("completed", "stopped_early", "failed") for _ in range(self.earlier[status])]
        active = [t for t in trials if t.status == RUNNING and t is not ended]
        running = [t for t in active if "epoch" in _last_result(t, latest)]
        starting = len(active) - len(running)  # trials whose process or workers are still starting
        finished = statuses.count("completed") + statuses.count("stopped_early")
        lines = [f"[{_clock(elapsed)}] {event}"] if event else []
        for trial_id, last in latest.items():  # the epoch being reported now
            value = _number(last.get(o.metric))
            lines.append(
                f"  {trial_id:<12} epoch {int(last.get('epoch') or 0)}/{o.epochs}  "
                f"{o.metric} {_fmt(value)}  {_number(last.get('images_per_s')) or 0:.0f} img/s"
                + ("  (recovered from its files)" if last.get("recovered") else "")
            )
        best = self._best(trials, latest)
        best_text = f"best {o.metric} {_fmt(best[0])} {best[1]}" if best else f"best {o.metric} -"
        counts = (
            f"[{_clock(elapsed)}] {len(running)} running, {f'{starting} starting, ' if starting else ''}"
            f"{finished}/{self.total} done, "
            f"{statuses.count('stopped_early')} early-stopped, {statuses.count('failed')} failed"
        )
        status = f"{counts} | {best_text}{self._eta(trials, elapsed, finished)}"
        lines += (
            [status] if len(status) <= WIDTH else [f"{counts}{self._eta(trials, elapsed, finished)}", f"  {best_text}"]
        )
        return lines

    def _best(self, trials, latest: dict):
        scored = [(self.outcomes.best(t), key(t)) for t in trials if self.outcomes.best(t) is not None]
        scored += [
            (_number(r.get(self.outcomes.metric)), tid)
            for tid, r in latest.items()
            if _number(r.get(self.outcomes.metric)) is not None
        ]
        scored += [self.earlier["best"]] if self.earlier["best"] else []
        if not scored:
            return None
        pick = max if self.outcomes.mode == "max" else min
        return pick(scored, key=lambda pair: pair[0])

    def _eta(self, trials, elapsed: float, finished: int) -> str:
        """Wall time per ended trial so far (concurrency included) times the trials to go, as of the last trial
        end, counting down from there: it never grows while a long trial runs."""
        before = self.earlier["completed"] + self.earlier["stopped_early"] + self.earlier["failed"]
        done = finished + sum(1 for t in trials if self.outcomes.status(t) == "failed") + self.earlier["failed"]
        if done <= before or done >= self.total:
            return ""
        if done != self._eta_done:
            # this driver's pace: an earlier run's or resume's time is not known here
            per_trial = elapsed / (done - before)
            self._eta_done, self._eta_at, self._eta_left = done, elapsed, per_trial * (self.total - done)
        left = max(0.0, self._eta_left - (elapsed - self._eta_at))
        return f" | ~{_clock(left).strip()} left"


class TrialEnds(ray.tune.Callback):
    """The moment Tune ends a trial: how it ended (and why it failed) in the trial's `end.json`, then in the study
    (COMPLETE, PRUNED, FAIL with the reason), so that `resume` neither trains on a trial ASHA stopped nor forgets a
    failure (trainables.foundation.trial_files, search.running.study)."""

    def __init__(self, outcomes: TrialOutcomes, experiment_dir: str, record: StudyRecord):
        self.outcomes, self.experiment_dir, self.record = outcomes, experiment_dir, record

    def __getstate__(self):  # Tune pickles its settings into tuner.pkl; the study lives in its own file
        return {**self.__dict__, "record": None}

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._end(trial, self.outcomes.status(trial, ended=True))

    def on_trial_error(self, iteration, trials, trial, **info):
        self._end(trial, "failed", root_cause(_error_text(trial)))

    def _end(self, trial, status: str, reason: str | None = None) -> None:
        if status == "failed" and reason is None:
            reason = _divergence(trial)
        TrialFiles(self.experiment_dir, key(trial)).write_ending(status, reason)
        self.record.end(key(trial), status, reason)


class Tracking(ray.tune.Callback):
    """The experiment tracker (search.running.tracking) as the trials go: each reported epoch, and each end once
    TrialEnds (earlier in the callback list) has written it into the study."""

    def __init__(self, tracker, record: StudyRecord):
        self.tracker, self.record = tracker, record

    def __getstate__(self):
        return {"tracker": None, "record": None}

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if "epoch" in result:
            self.tracker.epoch(key(trial), hyperparameters(trial))

    def on_trial_complete(self, iteration, trials, trial, **info):
        self.tracker.ended(self.record, key(trial), hyperparameters(trial))

    on_trial_error = on_trial_complete  # how it ended is in the study either way


class TensorBoardEvents(ray.tune.Callback):
    """Writes each trial's TensorBoard events once (here, in the search driver, never once per worker). A resumed
    trial's recovered epochs are written only where its event files lack them."""

    def __init__(self, outcomes: TrialOutcomes, experiment_folder: Path):
        self.outcomes, self.folder = outcomes, Path(experiment_folder)
        self.writers: dict[str, TrialEventWriter] = {}
        self.written: dict[str, set[int]] = {}

    def __getstate__(self):
        return {**self.__dict__, "writers": {}, "written": {}}

    def _writer(self, trial) -> TrialEventWriter:
        if key(trial) not in self.writers:
            # The trial's folder in the experiment (for a URI: in its local working folder).
            self.writers[key(trial)] = TrialEventWriter(self.folder / Path(trial.path).name)
        return self.writers[key(trial)]

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if "epoch" not in result:
            return
        if result.get("recovered"):
            if key(trial) not in self.written:
                self.written[key(trial)] = written_epochs(self.folder / Path(trial.path).name)
            if int(result["epoch"]) in self.written[key(trial)]:
                return
        self._writer(trial).epoch(result)

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._end(trial, self.outcomes.status(trial, ended=True))

    def on_trial_error(self, iteration, trials, trial, **info):
        self._end(trial, "failed")

    def _end(self, trial, status: str) -> None:
        o = self.outcomes
        outcome = {
            f"best_{o.metric}": o.best(trial),
            "epochs_run": o.epochs_run(trial),
            "status": status,
            "stopped_early": status == "stopped_early",
        }
        writer = self._writer(trial)
        writer.end(hyperparameters(trial), outcome)
        writer.close()
        self.writers.pop(key(trial), None)


class UploadOwnFiles(ray.tune.Callback):
    """For an experiment on a URI: after every trial, uploads this project's files (log, scheduler state) and that
    trial's TensorBoard events (closed by then: TensorBoardEvents comes first in the callback list)."""

    def __init__(self, experiment, list_files):
        self.experiment, self.list_files = experiment, list_files

    def _upload(self, trial) -> None:
        self.experiment.upload(self.list_files(self.experiment.local, Path(trial.path).name))

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._upload(trial)

    def on_trial_error(self, iteration, trials, trial, **info):
        self._upload(trial)


def _error_text(trial) -> str:
    """The trial's error as Tune wrote it (its staging copy, before it reaches the experiment folder)."""
    try:
        return Path(trial.error_file).read_text()
    except (OSError, TypeError):
        return ""


def _last_result(trial, latest: dict) -> dict:
    """The trial's newest result: the one being reported now (`latest`) or the last Tune stored."""
    return latest.get(key(trial)) or trial.last_result or {}


def _divergence(trial) -> str | None:
    last = trial.last_result or {}
    return divergence_cause(last, hyperparameters(trial)) if last.get("diverged") else None


def _fmt(value) -> str:
    return f"{value:.4f}" if value is not None else "-"


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60:2d}m{seconds % 60:02d}s"
