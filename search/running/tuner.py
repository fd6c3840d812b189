"""Runs a search on Ray Tune: Optuna (TPE) proposes, ASHA stops, every trial is a TorchTrainer run.

Ray is imported here, in `search.running.callbacks` (Tune callbacks) and in `trainables` (driver and worker loop) only.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
from pathlib import Path

import ray
import ray.tune
from ray.tune.schedulers import ASHAScheduler

from search.results.files import write_json_atomically
from search.results.summary import CHECKPOINT_KEY, SUMMARY_FILE, TrialRecord, summarize
from search.results.tensorboard import EVENT_FILES
from search.results.testset import test_accuracy
from search.running.callbacks import (
    ProgressView,
    SchedulerState,
    TensorBoardEvents,
    TrialEnds,
    TrialOutcomes,
    UploadOwnFiles,
)
from search.running.connect import check_paths_on_every_node, connect
from search.running.failures import root_cause
from search.running.restore import SETTINGS_COPY, read_settings, write_settings
from search.running.searcher import StudySearcher, make_sampler
from search.running.tune_state import (
    KeepExperimentState,
    keep_tuner_copy,
    prepare_restore,
    set_aside_sessions_after,
    tune_state_is_whole,
)
from trainables.driver import train_trial
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import SearchFailed, SearchInterrupted, UsageError
from trainables.foundation.resources import plan_concurrency, settle_shape
from trainables.foundation.scheduling import TrialPlacement, place_trials
from trainables.foundation.space import Space, load_space
from trainables.foundation.storage import (
    SEARCH_FILE,
    Experiment,
    as_location,
    delete_folder,
)
from trainables.foundation.trial_files import TRIAL_DIR_PREFIX, TrialFiles, recorded_trial_ids
from trainables.room import alive_node_resources

LOG_FILE = "search.log"
# Tune saves the searcher's state but not the scheduler's. Not a .pkl: Tune's restore copies the experiment's top-level
# .pkl and .json files into its staging folder and syncs that folder back every few seconds, over the newer file.
SCHEDULER_FILE = "scheduler-state.pickle"

# Keys Tune adds to every result; the summary keeps only what the training loop reported.
_TUNE_BOOKKEEPING = {
    "timestamp", "done", "training_iteration", "trial_id", "date", "time_this_iter_s", "pid", "hostname",
    "node_ip", "time_since_restore", "iterations_since_restore", "checkpoint_dir_name", "should_checkpoint",
}  # fmt: skip
_RECORD_BOOKKEEPING = {"config", "recovered"}  # each row of a trial's own result.json names its hyperparameters


def run_search(config: RunConfig, space: Space, experiment: Experiment) -> dict:
    """Run the whole search in `experiment` (claimed: an empty folder) and write `summary.json`; returns the summary."""
    write_settings(experiment, {"run": config.to_dict()})
    try:
        return drive(config, space, experiment, lambda placement: build_tuner(config, space, experiment, placement))
    except UsageError:
        # Refused before any trial ran: leave nothing that looks like an experiment.
        shutil.rmtree(experiment.local)
        if experiment.remote:
            delete_folder(experiment.location)
        raise


def resume_search(experiment: Experiment) -> dict:
    """Continue an interrupted search: finished trials are kept, unfinished ones continue from their checkpoints."""
    config = RunConfig.from_dict(read_settings(experiment.local)["run"])
    space = load_space(config.space)

    def prepare() -> tuple[int, str]:  # trials Tune must restore, from which session's state
        if experiment.remote:
            return 0, ""
        return prepare_restore(experiment.local, lambda: build_searcher(config, space))

    def restore(placement: TrialPlacement) -> ray.tune.Tuner:
        if not tune_state_is_whole(experiment):  # interrupted before any trial ran: start the search afresh
            return build_tuner(config, space, experiment, placement)
        # Tune keeps the scheduler, searcher and max_concurrent_trials it pickled when the search started.
        return ray.tune.Tuner.restore(
            experiment.location,
            trainable=build_trainable(config, space, experiment, placement),
            resume_unfinished=True,
            resume_errored=True,
        )

    return drive(config, space, experiment, restore, prepare)


def drive(config: RunConfig, space: Space, experiment: Experiment, make_tuner, prepare=lambda: (0, "")) -> dict:
    """Connect to Ray, fit the tuner, always release Ray, then write the summary of a finished search. `prepare()`:
    how many trials a restored Tune must find, in which session's state (fewer means its restore failed)."""
    log_file = experiment.local / LOG_FILE
    route_logs(log_file, config.verbose)
    known, session = prepare()
    started_here = connect(config)
    try:
        nodes = alive_node_resources()
        shape = settle_shape(config, nodes)  # auto keys on a cluster: what the cluster has, not what this machine has
        concurrency = plan_concurrency(nodes, shape, config.concurrency)
        check_paths_on_every_node(config, experiment)
        print(f"search: {config.trials} trials of {space.name}, {concurrency} at a time, {shape.in_words()} "
              f"({shape.keys()}), {asha_words(config)}log in {log_file}")  # fmt: skip
        if experiment.remote:
            print(f"results: {experiment.location}")
        placement = placement_of(config, concurrency)
        if not placement.in_process:
            from trainables.trainer import start_train_coordinator  # Ray Train's modules: only for its trials

            start_train_coordinator()  # comes up while Tune starts the first trial
        tuner = make_tuner(placement)
        if not experiment.remote:
            keep_tuner_copy(experiment.local)
        logging.getLogger("ray").info("search hands the trials to Tune")
        results = tuner.fit()
        if len(results) < known:  # Tune could not restore and started an empty search: keep it from shadowing
            set_aside_sessions_after(experiment.local, session, "unrestored")
            raise SearchFailed(f"Tune could not restore the search's state ({known} trials; see {log_file}); "
                               f"its files are untouched: run resume again")  # fmt: skip
        if not search_finished(results, config):
            raise SearchInterrupted(experiment.location)
        records = trial_records(results, experiment, config.storage)
    finally:
        if started_here:
            ray.shutdown()  # stops a Ray instance this process started; only disconnects from an existing cluster
        experiment.upload(own_files(experiment.local))  # also when interrupted: `resume` reads them from the URI
    summary = summarize(space.name, space.metric, space.mode, config.to_dict(), records, experiment.checkpoint_exists())
    if summary["best"] is not None:  # once, at the end, on data no choice was made on
        summary["best"].update(test_accuracy(summary["best"], config, space, experiment) or {})
    write_json_atomically(experiment.local / SUMMARY_FILE, summary)
    experiment.upload([SUMMARY_FILE])  # last: a summary.json there means everything else is there
    if summary["best"] is None:
        raise SearchFailed(no_result_message(summary, experiment, log_file))
    return summary


def no_result_message(summary: dict, experiment: Experiment, log_file: Path) -> str:
    """Why a search has no result, naming the first failed trial's root cause."""
    failed = [trial for trial in summary["trials"] if trial.get("error")]
    if not failed:
        return f"no trial produced a checkpoint; see {log_file}"
    first = failed[0]
    every = "every trial failed" if len(failed) == len(summary["trials"]) else f"{len(failed)} trials failed"
    error_file = experiment.join(f"{TRIAL_DIR_PREFIX}{first['trial_id']}", "error.txt")
    return f"no trial produced a checkpoint: {every}; the first, trial {first['trial_id']}: {first['error']} (see {error_file})"


def own_files(folder: Path, trial_folder: str = "*") -> list[str]:
    """This project's files in an experiment's working folder (Ray's own files reach storage through Ray): the
    search's own, and the TensorBoard events of every trial or of `trial_folder` only."""
    names = [SEARCH_FILE, SETTINGS_COPY, LOG_FILE, SCHEDULER_FILE]
    files = [name for name in names if (folder / name).is_file()]
    return files + sorted(str(path.relative_to(folder)) for path in folder.glob(f"{trial_folder}/{EVENT_FILES}"))


def search_finished(results, config: RunConfig) -> bool:
    """False when Tune returned early because it was interrupted (Ctrl-C): trials left unfinished or unstarted.
    On Ctrl-C Tune also marks a trial it had not started yet as terminated: one that never reported and did not
    fail never ran (its saved state still says pending, so `resume` runs it)."""
    if config.time_budget:  # trials the budget left unstarted are part of a finished search
        return len(results) == results.num_terminated + results.num_errors
    never_ran = sum(1 for result in results if "epoch" not in (result.metrics or {}) and result.error is None)
    unfinished = len(results) - results.num_terminated - results.num_errors
    return unfinished == 0 and never_ran == 0 and len(results) >= config.trials


# Tune snapshots its experiment state (which trials exist, and their status) at most this often. A trial's own files
# are the truth for what it did (trainables.foundation.trial_files); the period bounds how long a very short first epoch waits to be
# recorded until the snapshot names its trial.
STATE_SYNC_PERIOD = ("TUNE_GLOBAL_CHECKPOINT_S", "2")


def route_logs(log_file: Path, verbose: int) -> None:
    """Ray's, Tune's and Optuna's log lines go to the experiment's log file (and the terminal if verbose)."""
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"  # the legacy reporter is really silent at verbose=0
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"  # our own TensorBoard events replace Tune's
    os.environ.setdefault(*STATE_SYNC_PERIOD)
    handlers = [logging.FileHandler(log_file)] + ([logging.StreamHandler()] if verbose else [])
    for handler in handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ("ray", "py.warnings", "optuna"):
        logger = logging.getLogger(name)
        logger.handlers = list(handlers)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    logging.captureWarnings(True)


def asha_words(config: RunConfig) -> str:
    if config.grace >= config.epochs:
        return ""
    ends = config.lr_cycle_ends()
    restarts = f" (lr cycles end at epoch {', '.join(map(str, ends))})" if ends else ""
    return f"ASHA from epoch {config.grace} of {config.epochs}{restarts}, "


def placement_of(config: RunConfig, concurrency: int) -> TrialPlacement:
    return place_trials(config.workers, config.cpus, config.gpus, concurrency, config.max_failures, config.in_process)


def build_trainable(config: RunConfig, space: Space, experiment: Experiment, placement: TrialPlacement):
    trainable = ray.tune.with_parameters(
        train_trial, run=config.to_dict(), experiment_dir=experiment.location, metric=space.metric, mode=space.mode
    )
    return ray.tune.with_resources(trainable, placement.resources)


def build_tuner(config: RunConfig, space: Space, experiment: Experiment, placement: TrialPlacement) -> ray.tune.Tuner:
    scheduler = ASHAScheduler(
        time_attr="epoch",
        max_t=config.epochs,
        grace_period=config.grace,
        reduction_factor=config.reduction,
    )
    return ray.tune.Tuner(
        build_trainable(config, space, experiment, placement),
        param_space={**space.constants, **config.fixed},
        tune_config=ray.tune.TuneConfig(
            metric=space.metric,
            mode=space.mode,
            search_alg=build_searcher(config, space),
            scheduler=scheduler,
            num_samples=config.trials,
            max_concurrent_trials=placement.max_concurrent,
            reuse_actors=True,  # see trainables.foundation.scheduling
            time_budget_s=config.time_budget or None,
            trial_name_creator=lambda trial: trial.trial_id,
            trial_dirname_creator=lambda trial: f"{TRIAL_DIR_PREFIX}{trial.trial_id}",
        ),
        run_config=ray.tune.RunConfig(
            name=experiment.name,
            storage_path=experiment.parent,
            verbose=0,
            failure_config=ray.tune.FailureConfig(max_failures=placement.max_failures),
            callbacks=driver_callbacks(config, space, experiment, scheduler, placement.max_concurrent),
        ),
    )


def driver_callbacks(config: RunConfig, space: Space, experiment: Experiment, scheduler, concurrency: int) -> list:
    outcomes = TrialOutcomes(config.epochs, space.metric, space.mode)
    return [
        TrialEnds(outcomes, experiment.location),  # each trial writes its own result.json (trainables.foundation.trial_files)
        TensorBoardEvents(outcomes, experiment.local),
        ProgressView(outcomes, config.trials, concurrency),
        SchedulerState(scheduler, experiment.local / SCHEDULER_FILE),
        UploadOwnFiles(experiment, own_files),
    ] + ([] if experiment.remote else [KeepExperimentState(experiment.local)])


def build_searcher(config: RunConfig, space: Space) -> StudySearcher | None:
    searched = {k: v for k, v in space.hyperparameters.items() if k not in config.fixed}
    if not searched:
        return None  # everything fixed: Tune repeats the one configuration `trials` times
    sampler = make_sampler(config.sampler, config.seed, config.trials)
    return StudySearcher(searched, space.metric, space.mode, sampler, config.epochs)


def trial_records(results, experiment: Experiment, storage: str) -> list[TrialRecord]:
    """Every trial that Tune ran or that left a record in the experiment folder, as its own files tell it (they can
    be newer than Tune's state after an interrupted search); Tune adds the reason a trial failed."""
    errors = {trial_id_of(r): root_cause(str(r.error)) for r in results if r.error}
    configs = {trial_id_of(r): dict(r.config or {}) for r in results}
    ids = list(configs) + [i for i in recorded_trial_ids(experiment.location) if i not in configs]
    records = []
    for trial_id in ids:
        files = TrialFiles(experiment.location, trial_id)
        rows = files.rows()
        ending = files.ending() or {}
        config = configs.get(trial_id) or (rows[0].get("config") if rows else {}) or {}
        records.append(TrialRecord(trial_id=trial_id, config=config, history=[_clean_row(r, storage) for r in rows],
                                   error=errors.get(trial_id) or ending.get("error")))  # fmt: skip
    return records


def trial_id_of(result) -> str:
    return Path(result.path).name.removeprefix(TRIAL_DIR_PREFIX)


def _clean_row(row: dict, storage: str) -> dict:
    cleaned = {}
    for key, value in row.items():
        if key in _TUNE_BOOKKEEPING or key in _RECORD_BOOKKEEPING or key.startswith("config/"):
            continue
        if isinstance(value, float) and math.isnan(value):
            value = None
        elif hasattr(value, "item"):
            value = value.item()
        elif key == CHECKPOINT_KEY and isinstance(value, str):
            value = as_location(storage, value)  # Ray reports the path without its URI scheme
        cleaned[key] = value
    return cleaned
