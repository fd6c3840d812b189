"""`tracking=mlflow`: the search and its trials in MLflow, written by the search driver only: one parent run per
search, one nested run per trial, brought up to the study and the trials' files (`sync`), so an epoch is logged once
however often the search is resumed (docs/design.md, "MLflow: a view of the study, never a source"). A tracking
failure never fails the search, and Tune's callbacks never wait for MLflow (search.running.tracking.calls). No Ray,
no torch.
"""

from __future__ import annotations

import logging
from pathlib import Path

from search.results.summary import SUMMARY_FILE, read_summary
from search.running.study.queries import SEARCH_ID_ATTR, ending_in_study, trial_id_of
from search.running.study.record import StudyRecord
from search.running.tracking.calls import BackgroundCalls, queued, safely
from search.running.tracking.mlflow_store import (
    EXPERIMENT_TAG,
    PARENT_TAG,
    ROLE,
    SEARCH_TAG,
    TRACKING_FOLDER,
    TRIAL_TAG,
    flat,
    metric_list,
    mlflow_client,
    param_list,
    parent_run,
    relocate_artifacts,
    sqlite_file,
    store_files,
    tag_list,
    tracking_uri,
)
from trainables.foundation.config import RunConfig
from trainables.foundation.space import Space
from trainables.foundation.storage import Experiment
from trainables.foundation.trial_files import TRIAL_KEY, TrialFiles

MUTABLE_SETTINGS = {"trials", "time_budget", "concurrency", "verbose"}  # what `resume` may change: tags, not params
RUN_STATUS = {"completed": "FINISHED", "stopped_early": "FINISHED", "stopped_by_budget": "FINISHED", "failed": "FAILED"}
# MLflow 3's kind of a model-training experiment (its UI still opens the GenAI view in a fresh browser profile:
# search.running.tracking.mlflow_store.runs_table_link is what opens the runs table)
KIND_TAG, KIND = "mlflow.experimentKind", "custom_model_development"
ENDED = ("FINISHED", "FAILED")  # a run's MLflow statuses once the trial's end is logged on it (KILLED: interrupted)
PAGE = 5000  # nested runs a search_runs call returns
NOT_METRICS = {"epoch", "diverged", "recovered", "started_at", "pid", "resumed_from"}


class MlflowTracker(BackgroundCalls):
    """The search's parent run and its trials' nested runs in one MLflow experiment."""

    def __init__(self, config: RunConfig, space_name: str, experiment: Experiment, metric: str):
        self.config, self.experiment, self.metric = config, experiment, metric
        self.uri = tracking_uri(config.tracking, experiment)
        self.experiment_name = config.tracking.experiment or space_name
        self.client = self.parent = self.experiment_id = self.search_id = None
        self.runs: dict[str, str] = {}  # trial id -> nested run id
        self.logged: dict[str, set[int]] = {}  # run id -> epochs logged
        self.statuses: dict[str, str] = {}  # run id -> its MLflow status, as this tracker last knew it
        self.last_epochs: dict[str, float | None] = {}  # run id -> the last epoch logged when the store was opened

    def __getstate__(self):  # Tune pickles its callbacks; the client stays in the driver
        return {**self.__dict__, "client": None, "worker": None, "calls": None}

    def start(self, record: StudyRecord) -> None:
        """Open the store here, in the driver's main thread (MLflow's imports in another thread raced the main
        thread's imports of the packages both use; the calls here import what the thread's calls need), then list
        the trials' runs and bring them up to `record` in the tracker's thread, while Ray starts; the thread then
        does the calls Tune's callbacks queue."""
        self.search_id = record.study.user_attrs.get(SEARCH_ID_ATTR)
        self.open()
        self.start_worker(lambda: self.catch_up(record), "mlflow-tracker")

    @safely
    def open(self) -> None:
        """Find the search's parent run (or create it), marked running again; `catch_up` lists its trials' runs,
        which `sync` needs (without them it would make each trial a second run)."""
        if not self.config.tracking.uri:
            (self.experiment.local / TRACKING_FOLDER).mkdir(parents=True, exist_ok=True)
            database = sqlite_file(self.uri)
            if database.is_file():
                relocate_artifacts(database)  # the experiment (and its store) may have moved
        self.client = mlflow_client(self.uri)
        self.experiment_id = self._experiment_id()
        found = parent_run(self.client, self.experiment_id, self.experiment.location, self.search_id)
        if found:
            self.parent = found.info.run_id
            self.client.update_run(self.parent, status="RUNNING")
            self.client.log_batch(self.parent, tags=tag_list(self._identity()))  # where it is now (a moved search)
        else:
            self.parent = self._create_parent()
        mutable = {f"search.{key}": getattr(self.config, key) for key in sorted(MUTABLE_SETTINGS)}
        self.client.log_batch(self.parent, tags=tag_list(mutable))

    @safely
    def catch_up(self, record: StudyRecord) -> None:
        """The trials' runs as MLflow holds them (seconds for thousands), then MLflow brought up to `record`."""
        children = [run for run in self._children() if TRIAL_TAG in run.data.tags]
        self.runs = {run.data.tags[TRIAL_TAG]: run.info.run_id for run in children}
        self.statuses = {run.info.run_id: run.info.status for run in children}
        self.last_epochs = {run.info.run_id: run.data.metrics.get("epoch") for run in children}
        self.sync(record)

    def _children(self) -> list:
        """Every nested run of the parent, page after page (a search may hold more trials than a page)."""
        found, token = [], None
        while True:
            page = self.client.search_runs(
                [self.experiment_id], f"tags.`{PARENT_TAG}` = '{self.parent}'", max_results=PAGE, page_token=token
            )
            found += page
            token = page.token
            if not token:
                return found

    def _experiment_id(self) -> str:
        existing = self.client.get_experiment_by_name(self.experiment_name)
        if existing is not None:
            if existing.tags.get(KIND_TAG) != KIND:
                self.client.set_experiment_tag(existing.experiment_id, KIND_TAG, KIND)
            return existing.experiment_id
        database, artifacts = sqlite_file(self.uri), None
        if database is not None:  # beside the store (MLflow's default is ./mlruns of the working dir)
            artifacts = (database.parent / "artifacts").resolve().as_uri()
        return self.client.create_experiment(self.experiment_name, artifact_location=artifacts, tags={KIND_TAG: KIND})

    def _identity(self) -> dict:
        return {EXPERIMENT_TAG: self.experiment.location, **({SEARCH_TAG: self.search_id} if self.search_id else {})}

    def _create_parent(self) -> str:
        run = self.client.create_run(
            self.experiment_id, run_name=self.experiment.name, tags={ROLE: "search", **self._identity()}
        )
        settings = {k: v for k, v in flat(self.config.to_dict()).items() if k.split(".")[0] not in MUTABLE_SETTINGS}
        settings = {k: v for k, v in settings.items() if not k.startswith(("tracking.", "data.skip"))}
        self.client.log_batch(run.info.run_id, params=param_list(settings))
        return run.info.run_id

    @safely
    def shape(self, words: str, concurrency: int) -> None:
        self.client.log_batch(
            self.parent, tags=tag_list({"search.shape": words, "search.concurrent_trials": concurrency})
        )

    @safely
    def sync(self, record: StudyRecord) -> None:
        """Bring MLflow up to the study and the trials' files: every trial, every recorded epoch, every end."""
        for frozen in record.proposed():
            trial_id = trial_id_of(frozen)
            rows = TrialFiles(self.experiment.location, trial_id).rows()
            if self._ended_with_every_row(trial_id, frozen, rows):
                continue  # nothing to log, and no history asked: a resume of many ended trials costs no query each
            run_id = self._run_of(trial_id, record.configuration(frozen))
            self._log_rows(run_id, rows)
            if ending_in_study(frozen) is None:
                self._reopen(run_id)
            self._log_end(run_id, frozen, rows)

    @queued
    @safely
    def epoch(self, trial_id: str, config: dict) -> None:
        """A trial reported an epoch: its rows (written before Tune heard of it) that MLflow lacks."""
        self._log_rows(self._run_of(trial_id, config), TrialFiles(self.experiment.location, trial_id).rows())

    @queued
    @safely
    def continued(self, trial_id: str, config: dict) -> None:
        """A trial that had ended runs again (ASHA's promotion variant resumed it): so does its run."""
        self._reopen(self._run_of(trial_id, config))

    @queued
    @safely
    def ended(self, record: StudyRecord, trial_id: str, config: dict) -> None:
        """A trial ended (the study knows how: search.running.ends.callbacks.TrialEnds wrote it first)."""
        frozen = record.frozen(trial_id)
        if frozen is not None:  # the epochs its files hold that Tune never reported (a budget's end) first
            run_id, rows = self._run_of(trial_id, config), TrialFiles(self.experiment.location, trial_id).rows()
            self._log_rows(run_id, rows)
            self._log_end(run_id, frozen, rows)

    @safely
    def finish(self, summary: dict) -> None:
        """The search's result on its parent run, which ends: the best trial's metrics, counts, summary and plots."""
        artifacts = [self.experiment.local / SUMMARY_FILE, *report_plots(self.experiment)]
        best = summary.get("best") or {}
        metrics = {f"best_{k}": v for k, v in (best.get("metrics") or {}).items() if k not in NOT_METRICS}
        metrics.update({k: v for k, v in best.items() if k.startswith("test_") and k != "test_samples"})
        for status in RUN_STATUS:
            metrics[f"trials_{status}"] = sum(1 for t in summary["trials"] if t.get("status") == status)
        step = len(summary["trials"])  # a grown search adds a point to the same history; a repeated finish none
        logged = {m.step for m in self.client.get_metric_history(self.parent, f"best_{self.metric}")}
        if step in logged:
            metrics = {}
        self.client.log_batch(
            self.parent,
            metrics=metric_list(metrics, step=step),
            tags=tag_list({"search.best_trial": best.get("trial_id")}),
        )
        for path in artifacts:
            if path.is_file():
                self.client.log_artifact(self.parent, str(path))
        self.client.set_terminated(self.parent, "FINISHED" if best else "FAILED")

    @safely
    def interrupted(self) -> None:
        """An interrupted search: its parent and its unfinished trials' runs marked KILLED until `resume`."""
        for run_id in self.runs.values():
            if self.statuses.get(run_id) == "RUNNING":
                self._terminate(run_id, "KILLED")
        self.client.set_terminated(self.parent, "KILLED")

    def _ended_with_every_row(self, trial_id: str, frozen, rows: list[dict]) -> bool:
        """The trial ended in the study, its run ended in MLflow, and the run's last epoch (MLflow's latest `epoch`,
        logged with every row, rows in order) is at least every epoch its files hold: a run that ended while tracking
        was failing, or one continued since, is brought up to its files as before."""
        run_id = self.runs.get(trial_id)
        if run_id is None or self.statuses.get(run_id) not in ENDED or ending_in_study(frozen) is None:
            return False
        epochs = [row["epoch"] for row in rows if isinstance(row.get("epoch"), int)]
        return not epochs or max(epochs) <= (self.last_epochs.get(run_id) or 0)

    def _run_of(self, trial_id: str, config: dict) -> str:
        if trial_id not in self.runs:
            run = self.client.create_run(
                self.experiment_id, run_name=f"trial_{trial_id}", tags={PARENT_TAG: self.parent, TRIAL_TAG: trial_id}
            )
            params = {k: v for k, v in config.items() if k != TRIAL_KEY}
            self.client.log_batch(run.info.run_id, params=param_list(params))
            self.runs[trial_id] = run.info.run_id
            self.logged[run.info.run_id] = set()
            self.statuses[run.info.run_id] = "RUNNING"
        return self.runs[trial_id]

    def _log_rows(self, run_id: str, rows: list[dict]) -> None:
        if run_id not in self.logged:  # `epoch` is logged with every row (the metric may be non-finite, unlogged)
            histories = [self.client.get_metric_history(run_id, name) for name in (self.metric, "epoch")]
            self.logged[run_id] = {metric.step for history in histories for metric in history}
        for row in rows:
            epoch = row.get("epoch")
            if not isinstance(epoch, int) or epoch in self.logged[run_id]:
                continue  # an epoch logged before (a recovered one, or one a resume replays) is not logged twice
            values = {k: v for k, v in row.items() if k not in NOT_METRICS} | {"epoch": epoch}
            ended_at = (row.get("started_at") or 0) + (row.get("epoch_s") or 0)
            self.client.log_batch(run_id, metrics=metric_list(values, step=epoch, at=ended_at or None))
            self.logged[run_id].add(epoch)

    def _reopen(self, run_id: str) -> None:
        """A trial running again in the study (continued after a budget stopped it, or resumed): so is its run."""
        if self.statuses.get(run_id) != "RUNNING":
            self.client.update_run(run_id, status="RUNNING")
            self.client.log_batch(run_id, tags=tag_list({"search.status": "running", "search.reason": ""}))
            self.statuses[run_id] = "RUNNING"

    def _log_end(self, run_id: str, frozen, rows: list[dict]) -> None:
        """The trial's end as the study holds it, at the end of its last epoch (its files' account)."""
        ending = ending_in_study(frozen)
        if ending is None or self.statuses.get(run_id) in ENDED:
            return
        tags = {"search.status": ending.status, "search.reason": ending.reason or ""}
        self.client.log_batch(run_id, tags=tag_list(tags))
        ended_at = max(((row.get("started_at") or 0) + (row.get("epoch_s") or 0) for row in rows), default=0)
        self._terminate(run_id, RUN_STATUS[ending.status], int(ended_at * 1000) or None)

    def _terminate(self, run_id: str, status: str, end_time: int | None = None) -> None:
        self.client.set_terminated(run_id, status, end_time=end_time)
        self.statuses[run_id] = status


def report_plots(experiment: Experiment) -> list[Path]:
    """The plots the report drew (for several objectives, the front's too); none when the report cannot be built."""
    from search.results.report import build_report

    try:
        report = build_report(experiment.local, experiment.location)
    except Exception as exc:  # a plot is an extra: the search's result stands without it
        logging.getLogger("ray").warning("no report for the tracker: %s", exc)
        return []
    return [Path(report["folder"]) / name for name in report["plots"]]


def bring_up_to_date(config: RunConfig, space: Space, experiment: Experiment) -> bool:
    """A finished search's MLflow runs brought up to its study, its trials' files and its summary (`resume` of a
    finished search: after a tracking failure, or to track a search that had none). No Ray."""
    from search.running.proposals.study_setup import open_search_study

    record = open_search_study(config, space, experiment)
    tracker = start_tracker(config, space.name, experiment, space.metric, record)
    tracker.finish(read_summary(experiment.local))
    experiment.upload(store_files(experiment.local))
    return tracker.ready()


def start_tracker(config: RunConfig, space_name: str, experiment: Experiment, metric: str, record: StudyRecord):
    """The search's tracker, opening in the background, or None when the search is not tracked."""
    if config.tracking.to != "mlflow":
        return None
    tracker = MlflowTracker(config, space_name, experiment, metric)
    tracker.start(record)
    return tracker
