"""The Tune trainable: one driver per trial that fits a TorchTrainer (local mode for a one-worker trial)."""

from __future__ import annotations

import os
import time

import ray.tune

from trainables.checkpoints import CheckpointStore, run_location
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import divergence_message
from trainables.foundation.import_turns import import_in_turn
from trainables.foundation.resources import TrialShape, plan_concurrency
from trainables.foundation.scheduling import trains_in_process
from trainables.foundation.trial_files import TRIAL_KEY, TrialFiles
from trainables.foundation.warm import FIRST_STEP_MODULES, TRIAL_MODULES, imports_found
from trainables.room import alive_nodes, wait_for_room, worker_resources

# Ray Train is imported by `fit_trial`, in the trial's process (the search driver imports this module but never
# trains), and torch only where training happens: on the ranks, or here for one-worker trials.


class NonFiniteLoss(RuntimeError):
    """The training loss became NaN or infinite: the trial cannot recover."""


def train_run_name(trial_id: str) -> str:
    """Stable folder of a trial's Ray Train run (and its checkpoints) inside the experiment."""
    return f"train_{trial_id}"


_trials_in_this_process = 0


def process_start_figures() -> dict:
    """How warm this trial's process was when the trial began."""
    global _trials_in_this_process
    _trials_in_this_process += 1
    found = imports_found()
    figures = {"warm_imports": len(found), "torch_found": int("torch" in found)}
    figures["trial_of_process"] = _trials_in_this_process
    if _trials_in_this_process == 1:
        import psutil  # comes with ray[default]

        figures["process_started_at"] = psutil.Process().create_time()
    return figures


def train_trial(
    hp: dict, run: dict, experiment_dir: str, metric: str, mode: str, lease_token: str | None = None
) -> None:
    started_at = time.time()
    settings = RunConfig.from_dict(run)
    hp = dict(hp)
    trial_id = hp.pop(TRIAL_KEY, None) or ray.tune.get_context().get_trial_id()  # kept across `resume`
    files = TrialFiles(experiment_dir, trial_id)
    store = CheckpointStore(run_location(experiment_dir, train_run_name(trial_id)), metric, mode, settings.checkpoints)
    rows = files.rows()
    for row in store.rows_after(rows[-1]["epoch"] if rows else 0):  # a kill between a checkpoint and its row
        rows = files.append(rows, row)
    if rows:  # `resume` of a trial that ran: Tune, ASHA and Optuna hear again what its files hold
        if replay(rows, files.final_ending(), settings.epochs, hp):
            return
    output = {  # where rank 0 writes the trial's epochs and checkpoints
        "experiment_dir": experiment_dir,
        "lease_token": lease_token,  # the lease of the driver that started the trial: its writes go by that one
        "trial_id": trial_id,
        "run_name": train_run_name(trial_id),
        "metric": metric,
        "mode": mode,
        "keep": settings.checkpoints,
        "hp": hp,
        "trial_pid": os.getpid(),
        "driver_started_at": started_at,
        "time_base": rows[-1].get("time_total_s", 0.0) if rows else 0.0,
    }
    config = {"hp": hp, "run": run, "driver_started_at": started_at, "output": output, **process_start_figures()}
    if trains_in_process(settings.workers, settings.in_process):
        config["in_process"] = True
        waited, held = import_in_turn(TRIAL_MODULES + FIRST_STEP_MODULES)  # a process a core at a time
        config.update(import_turn_s=waited, import_turn_held=int(held))
        if settings.gpus:
            make_cuda_context_meanwhile()
    else:
        prepare_worker_group(settings)
    last = fit_trial(config, settings, trial_id, experiment_dir, metric, mode)
    if last.get("diverged"):
        raise NonFiniteLoss(divergence_message(last, hp))


class EndedBefore(RuntimeError):
    """A trial that had failed before the search was interrupted fails again on `resume`, for the same reason."""


def replay(rows: list[dict], ending: dict | None, epochs: int, hp: dict) -> bool:
    """Report the trial's recorded epochs to Tune again (marked `recovered`); True when the trial had ended."""
    for row in rows:
        ray.tune.report({**row, "recovered": True})
    last = rows[-1]
    if ending and ending.get("status") == "failed":
        raise EndedBefore(ending.get("error") or "the trial failed before the search was interrupted")
    if last.get("diverged"):
        raise NonFiniteLoss(divergence_message(last, hp))
    return bool(ending) or int(last.get("epoch", 0)) >= epochs


def make_cuda_context_meanwhile() -> None:
    """Create this process's CUDA context (1.7 s on an H100) while Ray Train starts the trial's run, not after it."""
    import threading

    import torch

    if torch.cuda.is_available() and not torch.cuda.is_initialized():
        threading.Thread(target=torch.zeros, args=(1,), kwargs={"device": "cuda"}, name="cuda", daemon=True).start()


def prepare_worker_group(settings: RunConfig) -> None:
    # Train's controller frees a finished run's resources at its health check, every 2 s by default.
    os.environ.setdefault("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.5")
    # Tune waits 2 s by default for a stopped trial's thread, which returns once its group is aborted (about 1 s).
    os.environ.setdefault("TUNE_FUNCTION_THREAD_TIMEOUT_S", "10")
    # A preemption watcher (one more process per run) has nowhere to move a run on a lone node.
    if len(alive_nodes()) == 1:
        os.environ.setdefault("RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", "0")
    # Nodes may have left since the search started; Ray Train would wait for them forever.
    plan_concurrency(alive_nodes("Resources"), TrialShape.of(settings), 1)
    wait_for_room(settings)


def train_fn_per_worker(config: dict) -> dict:
    """What each rank runs: `trainables.worker`'s loop, imported only there (a DDP trial's process needs no torch)."""
    config = {**config, "rank_warm_imports": len(imports_found())}
    from trainables import worker

    return worker.train_fn_per_worker(config)


def fit_trial(config: dict, settings: RunConfig, trial_id: str, experiment_dir: str, metric: str, mode: str) -> dict:
    """Fit the trial's TorchTrainer; returns the last epoch's metrics."""
    import ray.train
    from ray.tune.integration.ray_train import TuneReportCallback

    from trainables.ray_private import get_session, wait_until_tune_took_every_report
    from trainables.trainer import TrialTrainer

    in_process = "in_process" in config
    trainer = TrialTrainer(
        train_fn_per_worker,
        train_loop_config=config,
        scaling_config=ray.train.ScalingConfig(
            num_workers=0 if in_process else settings.workers,  # 0: Ray Train's local mode, in this process
            use_gpu=bool(settings.gpus) and not in_process,
            resources_per_worker=None if in_process else worker_resources(settings),
        ),
        run_config=ray.train.RunConfig(
            name=train_run_name(trial_id),
            storage_path=experiment_dir,
            # No Train checkpoints: rank 0 keeps them in the trial's CheckpointStore (trainables.session).
            # The worker group's start (waiting for resources) is retried as often as a worker failure, not forever.
            failure_config=ray.train.FailureConfig(
                max_failures=settings.max_failures, controller_failure_limit=settings.max_failures
            ),
            callbacks=[] if in_process else [TuneReportCallback()],
        ),
    )
    result = trainer.fit_until(get_session().stop_event)  # set when Tune finishes this trial's session
    if not in_process:
        wait_until_tune_took_every_report()  # else the trial hangs (Ray's queues of one: see there)
    return (result.return_value or {}) if result is not None else {}
