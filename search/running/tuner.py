"""Runs a search on Ray Tune: Optuna (TPE) proposes, ASHA stops, every trial is a TorchTrainer run. Every session
(`run`, `resume`, a grown search) builds a fresh `Tuner` over the study and the trials' own files; Tune's own snapshots
are never restored.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
from pathlib import Path

import ray
import ray.tune

from search.results.files import write_json_atomically
from search.results.repeat_spread import add_repeats
from search.results.summary import SUMMARY_FILE
from search.results.tensorboard import EVENT_FILES
from search.results.testset import test_accuracy
from search.running.asha.of_search import promotion_owed, scheduler_of
from search.running.clock import command_began
from search.running.driver_words import asha_words, budget_words, first_line_words, no_result_message, route_logs
from search.running.ends.callbacks import TensorBoardEvents, Tracking, TrialEnds, UploadOwnFiles
from search.running.ends.decider import Decider
from search.running.ends.reconcile import continue_stopped_by_budget, reconcile
from search.running.joining.connect import check_paths_on_every_node, connect
from search.running.live_view import ProgressView
from search.running.proposals.searcher import StudySearcher
from search.running.proposals.study_setup import finite_count, open_search_study, within_space
from search.running.settings import write_settings
from search.running.stopping import SessionStop, ctrl_c_stops
from search.running.study.record import StudyRecord
from search.running.tracking.mlflow_store import store_files
from search.running.tracking.tracker import MlflowTracker, start_tracker
from search.running.trial_results import summary_of, trial_results
from trainables.driver import train_trial
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import RayDidNotStart, SearchFailed, SearchInterrupted, UsageError
from trainables.foundation.resources import plan_concurrency, settle_shape
from trainables.foundation.scheduling import TrialPlacement, place_trials
from trainables.foundation.space import Space
from trainables.foundation.storage import SEARCH_FILE, STUDY_FILE, Experiment, delete, fence_lost
from trainables.foundation.trial_files import TRIAL_DIR_PREFIX, TRIAL_KEY, remove_empty_twins
from trainables.ray_private import spare_imports_in_tunes_usage_tag, tunes_result_frames_unread
from trainables.room import alive_nodes

LOG_FILE = "search.log"

# Tune hands a finished (or stopped) trial's process to the next trial: torch imported, the data decoded, the CUDA
# context made. Kept against Tune's default (False) by measurement: benchmarks/warm_start.py, docs/design.md.
REUSE_ACTORS = True
SNAPSHOT_VARIABLE, TUNE_SNAPSHOT_S = "TUNE_GLOBAL_CHECKPOINT_S", "3600"  # how often Tune snapshots, at most (s)


def run_search(config: RunConfig, space: Space, experiment: Experiment, enqueued: list[dict] = ()) -> dict:
    """Run the whole search in `experiment` (claimed: an empty folder) and write `summary.json`; returns the summary.
    `enqueued`: configurations to run first (`enqueue=`), already checked against the space."""
    write_settings(experiment, {"run": config.to_dict()})
    record = open_search_study(config, space, experiment, enqueued)
    experiment.upload([STUDY_FILE])  # readers of a URI find the study from the start (updated after every trial)
    try:
        return drive(config, space, experiment, record)
    except (UsageError, RayDidNotStart):
        if not record.proposed() and not any(experiment.local.glob(f"{TRIAL_DIR_PREFIX}*/*")):
            # Refused before any trial was proposed: leave nothing that looks like an experiment. After that, an
            # error (even one worded as bad input, e.g. storage that stopped answering) keeps every file.
            shutil.rmtree(experiment.local)
            if experiment.remote:
                delete(experiment.location, folder=True)
        raise


def resume_search(experiment: Experiment, config: RunConfig, space: Space) -> dict:
    """Continue a search from its study and its trials' files (`config` may have grown `trials`): finished trials are
    kept, unfinished ones run again from their checkpoints, and new ones are proposed up to `config.trials` (fewer
    where a finite space has fewer configurations left: each is proposed once)."""
    return drive(config, space, experiment, open_search_study(config, space, experiment))


def drive(config: RunConfig, space: Space, experiment: Experiment, record: StudyRecord) -> dict:
    """Bring the study up to the trials' files, run what is left on Ray Tune (first the trials an earlier session
    left unended, then those a budget stopped), then write the summary of a finished search."""
    log_file = experiment.local / LOG_FILE
    route_logs(log_file, config.verbose)
    tensorboard = TensorBoardEvents(record, experiment.local)
    decider = Decider(record, experiment.location, [tensorboard])  # the others join when Tune runs
    unended = reconcile(decider)
    budget_spent = config.epoch_budget and record.epochs_spent() >= config.epoch_budget  # nothing left to train
    if budget_spent:
        decider.end_running("epoch")
        unended = []
    else:
        unended += continue_stopped_by_budget(record)
    # MLflow brought up to what earlier sessions recorded (all of it, for a search tracked late), while Ray starts
    tracker = start_tracker(config, space.name, experiment, space.metric, record)
    proposed = record.proposed()
    capped = within_space(config, space, proposed)  # a finite space: no more trials than configurations left
    to_run = 0 if budget_spent else len(unended) + max(0, capped.trials - len(proposed))
    promote = config.asha == "promote"  # its scheduler rebuilt from the study now: its paused trials wait
    scheduler = scheduler_of(config, record, space) if promote else None
    # asked only with no new trial left to start (none to run, or all ended): the last promotion counts too
    waiting = lambda: not budget_spent and promotion_owed(config, scheduler, last=True)  # noqa: E731
    failure = functools.partial(stopped_by, record, experiment)  # what stops the search at once
    stop = SessionStop(config.time_budget, budget_words, config.epoch_budget, record.epochs_spent(), failure)
    try:
        if to_run or waiting():
            fit(capped, space, experiment, unended, to_run, tracker, stop, decider, scheduler, asked=config.trials)
        if failure() is not None:
            raise failure()
        finished = record.finished() >= capped.trials and not waiting()
        if stop.interrupted or not (budget_spent or stop.out_of_budget or finished):
            raise SearchInterrupted(experiment.location)
    except BaseException:
        if tracker:
            tracker.interrupted()
        raise
    finally:
        experiment.upload(own_files(experiment.local))  # also when interrupted: `resume` reads them from the URI
    return write_summary(config, space, experiment, record, log_file, tracker)


def fit(
    config,
    space,
    experiment,
    unended: list,
    to_run: int,
    tracker: MlflowTracker | None,
    stop: SessionStop,
    decider,
    scheduler,
    asked: int | None = None,
) -> None:
    """Run `to_run` trials on Ray Tune, `unended` first, until done or stopped by `stop` (a budget: its trials end so;
    Ctrl-C or a failed write of the study: they stay unended, for `resume`), every end through `decider`, ASHA's
    decisions by `scheduler` (with asha=promote, built by `drive`: it also resumes paused trials; else None, built
    here). `asked`: the trials asked for, where a finite space holds fewer (`config.trials`)."""
    record, log_file = decider.record, experiment.local / LOG_FILE
    started_here = connect(config)  # False for a Ray this process keeps (search.running.joining.kept_ray)
    try:
        nodes = alive_nodes("Resources")
        shape = settle_shape(config, nodes)  # auto keys on a cluster: what the cluster has, not what this machine has
        concurrency = plan_concurrency(nodes, shape, config.concurrency)
        check_paths_on_every_node(config, experiment)
        trials = first_line_words(config, to_run, record, asked, finite_count(config, space))
        print(
            f"search: {trials} of {space.name}, {concurrency} at a time, "
            f"{shape.in_words()} ({shape.keys()}), {asha_words(config)}log in {log_file}"
        )
        if experiment.remote:
            print(f"results: {experiment.location}")
        if tracker and tracker.ready():
            tracker.shape(shape.in_words(), concurrency)
            print(f"tracking: MLflow at {tracker.uri}, experiment {tracker.experiment_name}")
        placement = place_trials(
            config.workers, config.cpus, config.gpus, concurrency, config.max_failures, config.in_process
        )
        if not placement.in_process:
            from trainables.trainer import start_train_coordinator  # Ray Train's modules: only for its trials

            start_train_coordinator()  # comes up while Tune starts the first trial
        scheduler = scheduler or scheduler_of(config, record, space)
        decider.followers = followers_of(config, experiment, record, tracker, decider.followers)
        trial_ends = TrialEnds(decider, config.epochs, scheduler.stopped_by_me)
        callbacks = [trial_ends, *decider.followers]
        tuner = build_tuner(config, space, experiment, placement, record, unended, to_run, callbacks, stop, scheduler)
        spare_imports_in_tunes_usage_tag()  # Tune's usage tag: MLflow imported only when a search tracks with it
        logging.getLogger("ray").info("search hands the trials to Tune")
        with ctrl_c_stops(stop), tune_snapshot_period(), tunes_result_frames_unread():
            tuner.fit()  # its ResultGrid unread: the study and the trials' files are the record
        remove_empty_twins(experiment.local)
        if stop.out_of_budget and not stop.interrupted and stopped_by(record, experiment) is None:
            trial_ends.out_of_budget(stop.budget)
    finally:
        if started_here:
            ray.shutdown()  # stops a Ray instance this process started; only disconnects from an existing cluster


def stopped_by(record: StudyRecord, experiment: Experiment) -> Exception | None:
    """What stops the search at once: a write of its study that failed, or its lease another driver took."""
    return record.failure or fence_lost(experiment.location)


@contextlib.contextmanager
def tune_snapshot_period():
    """Tune's experiment snapshot lists every trial and is never restored here (each session starts from the study
    and the trials' files; a failed trial's error file is written by the decider): Tune writes it every few seconds
    by default, a cost that grows with the search, so hourly at most while the search runs (unless the user set it)."""
    if os.environ.get(SNAPSHOT_VARIABLE) is not None:
        yield
        return
    os.environ[SNAPSHOT_VARIABLE] = TUNE_SNAPSHOT_S
    try:
        yield
    finally:
        os.environ.pop(SNAPSHOT_VARIABLE, None)


def write_summary(config, space, experiment: Experiment, record: StudyRecord, log_file: Path, tracker=None) -> dict:
    summary = summary_of(config, space, experiment, record, trial_results(record, experiment))
    summary["epochs_spent"] = record.epochs_spent()  # trial-epochs, against the epoch budget when there is one
    for chosen in ([summary["best"]] if summary["best"] else []) + summary.get("front", []):
        chosen.update(test_accuracy(chosen, config, space, experiment) or {})  # at the end: data no choice was made on
    add_repeats(summary, lambda trial: test_accuracy(trial, config, space, experiment))  # repeats: mean and spread
    write_json_atomically(experiment.local / SUMMARY_FILE, summary)
    if tracker:
        tracker.sync(record)
        tracker.finish(summary)
        experiment.upload(own_files(experiment.local, trial_folder=""))
    experiment.upload([SUMMARY_FILE])  # last: a summary.json there means everything else is there
    if summary["best"] is None:
        raise SearchFailed(no_result_message(summary, experiment, log_file))
    return summary


def own_files(folder: Path, trial_folder: str = "*") -> list[str]:
    """This project's files in an experiment's working folder (Ray's own reach storage through Ray): the search's own,
    its MLflow store there, and the TensorBoard events of every trial, of `trial_folder` only, or of none ("")."""
    names = [SEARCH_FILE, STUDY_FILE, LOG_FILE]
    files = [name for name in names if (folder / name).is_file()]
    files += store_files(folder)
    events = folder.glob(f"{trial_folder}/{EVENT_FILES}") if trial_folder else []
    return files + sorted(str(path.relative_to(folder)) for path in events)


def build_tuner(
    config: RunConfig,
    space: Space,
    experiment: Experiment,
    placement: TrialPlacement,
    record: StudyRecord,
    unended: list,
    to_run: int,
    callbacks: list,
    stop: SessionStop,
    scheduler,
) -> ray.tune.Tuner:
    """A fresh Tuner for this `run` or `resume`: `to_run` trials, first the `unended` ones (with their own ids)."""
    from trainables.foundation.fenced_store import fenced_filesystem
    from trainables.foundation.trial_lease import TrialLease

    lease_token = TrialLease(experiment.location).token if experiment.remote else None  # this driver's: it holds it
    promotions = (scheduler, to_run - len(unended)) if getattr(scheduler, "promote", False) else ()
    # a resumption is a trial of Tune's too: at most one a rung for each trial to run and each waiting already
    resumptions = (
        len(scheduler.promotions.order) * (to_run + len(scheduler.promotions.waiting_ids())) if promotions else 0
    )
    storage_filesystem, storage_path = fenced_filesystem(experiment.location) if experiment.remote else (None, None)
    trainable = ray.tune.with_parameters(
        train_trial,
        run=config.to_dict(),
        experiment_dir=experiment.location,
        metric=space.metric,
        mode=space.mode,
        lease_token=lease_token,
    )
    return ray.tune.Tuner(
        ray.tune.with_resources(trainable, placement.resources),
        param_space=config.constants(space),
        tune_config=ray.tune.TuneConfig(
            metric=space.metric,
            mode=space.mode,
            search_alg=StudySearcher(record, unended, space.metric, space.mode, config.seed, *promotions),
            scheduler=scheduler,
            num_samples=to_run + resumptions,
            max_concurrent_trials=placement.max_concurrent,
            reuse_actors=REUSE_ACTORS,
            trial_name_creator=lambda trial: trial.config[TRIAL_KEY],
            trial_dirname_creator=lambda trial: f"{TRIAL_DIR_PREFIX}{trial.config[TRIAL_KEY]}",
        ),
        run_config=ray.tune.RunConfig(
            name=experiment.name,
            storage_path=storage_path or experiment.parent,
            storage_filesystem=storage_filesystem,  # on a URI, Tune's own writes pass the lease's fence too
            verbose=0,
            failure_config=ray.tune.FailureConfig(max_failures=placement.max_failures),
            callbacks=callbacks,
            stop=stop,
        ),
    )


def followers_of(config, experiment: Experiment, record: StudyRecord, tracker, before: list) -> list:
    """Who is told of each trial's end, in this order (TensorBoard's events are closed before the upload): tracking,
    TensorBoard (`before`: the one the decider had from the start), the live view, the upload."""
    tensorboard = [follower for follower in before if isinstance(follower, TensorBoardEvents)]
    return [
        *([Tracking(tracker, record)] if tracker else []),
        *(tensorboard or [TensorBoardEvents(record, experiment.local)]),
        ProgressView.of(config, record, command_began(), experiment.parent),
        UploadOwnFiles(experiment, own_files),
    ]
