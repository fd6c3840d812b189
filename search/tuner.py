"""Runs a search on Ray Tune: Optuna (TPE) proposes, ASHA stops, every trial is a TorchTrainer run.

Ray is imported here, in `search.callbacks` (Tune callbacks) and in `trainables` (driver and worker loop) only.
"""

from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path

import ray
import ray.tune
from optuna.samplers import TPESampler
from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback
from ray.tune.schedulers import ASHAScheduler
from ray.tune.search.optuna import OptunaSearch

from search.callbacks import ProgressView, SchedulerState, TensorBoardEvents, TrialOutcomes
from search.config import RunConfig
from search.errors import SearchFailed, SearchInterrupted
from search.resources import TrialShape, local_cpu_count, plan_concurrency
from search.space import Space, load_space
from search.files import write_json_atomically
from search.summary import SUMMARY_FILE, TrialRecord, summarize
from trainables.driver import DRIVER_RESOURCES, train_trial

TRIAL_DIR_PREFIX = "trial_"
LOG_FILE = "search.log"
SEARCH_FILE = "search.json"  # the search's config, written before the first trial: marks an experiment folder
SCHEDULER_FILE = "scheduler-state.pkl"  # Tune saves the searcher's state but not the scheduler's

# Keys Tune adds to every result; the summary keeps only what the training loop reported.
_TUNE_BOOKKEEPING = {
    "timestamp", "done", "training_iteration", "trial_id", "date", "time_this_iter_s", "pid", "hostname",
    "node_ip", "time_since_restore", "iterations_since_restore", "checkpoint_dir_name", "should_checkpoint",
}  # fmt: skip


def run_search(config: RunConfig, space: Space, experiment: Path) -> dict:
    """Run the whole search and write `summary.json`; returns the summary."""
    experiment.mkdir(parents=True)
    write_json_atomically(experiment / SEARCH_FILE, {"run": config.to_dict()})
    return drive(config, space, experiment, lambda concurrency: build_tuner(config, space, experiment, concurrency))


def resume_search(experiment: Path) -> dict:
    """Continue an interrupted search: finished trials are kept, unfinished ones continue from their checkpoints."""
    config = RunConfig.from_dict(json.loads((experiment / SEARCH_FILE).read_text())["run"])
    space = load_space(config.space)

    def restore(concurrency: int) -> ray.tune.Tuner:
        # Tune keeps the scheduler, searcher and max_concurrent_trials it pickled when the search started.
        return ray.tune.Tuner.restore(
            str(experiment),
            trainable=build_trainable(config, space, experiment),
            resume_unfinished=True,
            resume_errored=True,
        )

    return drive(config, space, experiment, restore)


def drive(config: RunConfig, space: Space, experiment: Path, make_tuner) -> dict:
    """Connect to Ray, fit the tuner, always release Ray, then write the summary of a finished search."""
    route_logs(experiment / LOG_FILE, config.verbose)
    started_here = connect(config)
    try:
        concurrency = plan_concurrency(alive_nodes(), TrialShape.of(config), config.concurrency)
        print(f"search: {config.trials} trials of {space.name}, {concurrency} at a time, log in {experiment / LOG_FILE}")
        results = make_tuner(concurrency).fit()
        if not search_finished(results, config):
            raise SearchInterrupted(experiment)
        records = [trial_record(result) for result in results]
    finally:
        if started_here:
            ray.shutdown()
    summary = summarize(space.name, space.metric, space.mode, config.to_dict(), records)
    write_json_atomically(experiment / SUMMARY_FILE, summary)
    if summary["best"] is None:
        raise SearchFailed(f"no trial produced a checkpoint; see {experiment / LOG_FILE} and the trials' error.txt")
    return summary


def search_finished(results, config: RunConfig) -> bool:
    """False when Tune returned early because it was interrupted (Ctrl-C): trials left unfinished or unstarted."""
    unfinished = len(results) - results.num_terminated - results.num_errors
    return unfinished == 0 and (len(results) >= config.trials or bool(config.time_budget))


def route_logs(log_file: Path, verbose: int) -> None:
    """Ray's, Tune's and Optuna's log lines go to the experiment's log file (and the terminal if verbose)."""
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"  # the legacy reporter is really silent at verbose=0
    os.environ["TUNE_DISABLE_AUTO_CALLBACK_LOGGERS"] = "1"  # our own TensorBoard events replace Tune's
    handlers = [logging.FileHandler(log_file)] + ([logging.StreamHandler()] if verbose else [])
    for handler in handlers:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for name in ("ray", "py.warnings", "optuna"):
        logger = logging.getLogger(name)
        logger.handlers = list(handlers)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    logging.captureWarnings(True)


def connect(config: RunConfig) -> bool:
    """Join `address` or start a local Ray instance; True when this process started it."""
    common = dict(log_to_driver=bool(config.verbose), logging_level=logging.INFO)
    if config.address:
        ray.init(address=config.address, **common)
        return False
    context = ray.init(
        address="local",
        num_cpus=local_cpu_count(),
        include_dashboard=True,
        dashboard_host="127.0.0.1",
        **common,
    )
    logging.getLogger("ray").info("search started a local Ray instance, session %s", context.address_info["session_dir"])
    return True


def alive_nodes() -> list[dict]:
    return [node["Resources"] for node in ray.nodes() if node.get("Alive")]


def build_trainable(config: RunConfig, space: Space, experiment: Path):
    trainable = ray.tune.with_parameters(
        train_trial, run=config.to_dict(), experiment_dir=str(experiment), metric=space.metric, mode=space.mode
    )
    return ray.tune.with_resources(trainable, DRIVER_RESOURCES)


def build_tuner(config: RunConfig, space: Space, experiment: Path, concurrency: int) -> ray.tune.Tuner:
    scheduler = ASHAScheduler(
        time_attr="epoch",
        max_t=config.epochs,
        grace_period=config.grace,
        reduction_factor=config.reduction,
    )
    return ray.tune.Tuner(
        build_trainable(config, space, experiment),
        param_space={**space.constants, **config.fixed},
        tune_config=ray.tune.TuneConfig(
            metric=space.metric,
            mode=space.mode,
            search_alg=build_searcher(config, space),
            scheduler=scheduler,
            num_samples=config.trials,
            max_concurrent_trials=concurrency,
            time_budget_s=config.time_budget or None,
            trial_name_creator=lambda trial: trial.trial_id,
            trial_dirname_creator=lambda trial: f"{TRIAL_DIR_PREFIX}{trial.trial_id}",
        ),
        run_config=ray.tune.RunConfig(
            name=experiment.name,
            storage_path=str(experiment.parent),
            verbose=0,
            callbacks=driver_callbacks(config, space, experiment, scheduler, concurrency),
        ),
    )


def driver_callbacks(config: RunConfig, space: Space, experiment: Path, scheduler, concurrency: int) -> list:
    outcomes = TrialOutcomes(config.epochs, space.metric, space.mode)
    return [
        CSVLoggerCallback(),
        JsonLoggerCallback(),  # each trial's result.json: every epoch's metrics
        TensorBoardEvents(outcomes),
        ProgressView(outcomes, config.trials, concurrency),
        SchedulerState(scheduler, experiment / SCHEDULER_FILE),
    ]


def build_searcher(config: RunConfig, space: Space) -> OptunaSearch | None:
    searched = {k: v for k, v in space.hyperparameters.items() if k not in config.fixed}
    if not searched:
        return None  # everything fixed: Tune repeats the one configuration `trials` times
    return OptunaSearch(space=searched, metric=space.metric, mode=space.mode, sampler=TPESampler(seed=config.seed))


def trial_record(result) -> TrialRecord:
    frame = result.metrics_dataframe
    rows = frame.to_dict("records") if frame is not None else []
    return TrialRecord(
        trial_id=Path(result.path).name.removeprefix(TRIAL_DIR_PREFIX),
        config=dict(result.config or {}),
        history=[_clean_row(row) for row in rows],
        error=short_error(result.error) if result.error else None,
    )


def _clean_row(row: dict) -> dict:
    cleaned = {}
    for key, value in row.items():
        if key in _TUNE_BOOKKEEPING or key.startswith("config/"):
            continue
        if isinstance(value, float) and math.isnan(value):
            value = None
        elif hasattr(value, "item"):
            value = value.item()
        cleaned[key] = value
    return cleaned


def short_error(error: BaseException) -> str:
    """The last line of a (possibly wrapped) remote error: usually `Type: message` of the root cause."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__
