"""The Tune trainable: one driver per trial that builds and fits a distributed TorchTrainer."""

from __future__ import annotations

import time

import ray.train
import ray.tune
from ray.train.torch import TorchTrainer
from ray.tune.integration.ray_train import TuneReportCallback

from search.config import RunConfig
from search.resources import TrialShape, plan_concurrency
from trainables.training import NonFiniteLoss
from trainables.worker import train_fn_per_worker

# What the trial driver itself asks of the cluster: no CPU (the training workers hold those), only a
# token of memory, because Tune refuses a trial that asks for nothing at all.
DRIVER_RESOURCES = {"cpu": 0, "memory": 64 * 2**20}


def train_run_name(trial_id: str) -> str:
    """Stable folder of a trial's Ray Train run (and its checkpoints) inside the experiment."""
    return f"train_{trial_id}"


def alive_nodes() -> list[dict]:
    """Every node of the cluster that is alive now, as `ray.nodes()` describes it."""
    return [node for node in ray.nodes() if node.get("Alive")]


def alive_node_resources() -> list[dict]:
    """Total resources of every node of the cluster that is alive now."""
    return [node["Resources"] for node in alive_nodes()]


def worker_resources(run: RunConfig) -> dict:
    resources = {"CPU": run.cpus}
    if run.gpus:
        resources["GPU"] = run.gpus
    return resources


def train_trial(hp: dict, run: dict, experiment_dir: str, metric: str, mode: str) -> None:
    started_at = time.time()
    settings = RunConfig.from_dict(run)
    trial_id = ray.tune.get_context().get_trial_id()
    # Nodes may have left since the search started; Ray Train would wait for them forever.
    plan_concurrency(alive_node_resources(), TrialShape.of(settings), 1)
    trainer = TorchTrainer(
        train_fn_per_worker,
        train_loop_config={"hp": hp, "run": run, "driver_started_at": started_at},
        scaling_config=ray.train.ScalingConfig(
            num_workers=settings.workers,
            use_gpu=bool(settings.gpus),
            resources_per_worker=worker_resources(settings),
        ),
        run_config=ray.train.RunConfig(
            name=train_run_name(trial_id),
            storage_path=experiment_dir,
            checkpoint_config=ray.train.CheckpointConfig(
                num_to_keep=settings.checkpoints,
                checkpoint_score_attribute=metric,
                checkpoint_score_order=mode,
            ),
            # The worker group's start (waiting for resources) is retried as often as a worker failure, not forever.
            failure_config=ray.train.FailureConfig(
                max_failures=settings.max_failures, controller_failure_limit=settings.max_failures
            ),
            callbacks=[TuneReportCallback()],
        ),
    )
    result = trainer.fit()
    last = result.metrics or {}
    if last.get("diverged"):
        raise NonFiniteLoss(
            f"loss became non-finite at epoch {last.get('epoch')} "
            f"(train_loss={last.get('train_loss')}, val_loss={last.get('val_loss')})"
        )
