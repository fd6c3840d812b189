"""What a worker asks of Ray: its rank and device, the model's wrapping, where epochs and checkpoints go.

Two kinds of trial: a Ray Train DDP group (several workers), and a one-worker trial that trains inside its own Tune
trial process (Ray Train's local mode), where `ray.train.get_context`, `prepare_model` and `ray.train.report` are
not available, so results go to Tune directly and checkpoints to the same place a Train run keeps them.
"""

from __future__ import annotations

from contextlib import contextmanager

import ray.train
import ray.train.torch
import ray.tune
import torch

from search.summary import CHECKPOINT_KEY
from trainables.checkpoints import CheckpointStore, checkpoint_folder_name, run_location


class TrainGroupSession:
    """A rank of a Ray Train worker group: Train keeps the checkpoints and hands results to Tune (TuneReportCallback
    adds their path)."""

    def __init__(self):
        context = ray.train.get_context()
        self.rank, self.world_size = context.get_world_rank(), context.get_world_size()
        self.device = ray.train.torch.get_device()

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        """On the device, wrapped in DistributedDataParallel."""
        return ray.train.torch.prepare_model(model)

    @contextmanager
    def latest_checkpoint(self):
        checkpoint = ray.train.get_checkpoint()
        if checkpoint is None:
            yield None
            return
        with checkpoint.as_directory() as directory:
            yield directory

    def report(self, metrics: dict, folder: str | None, epoch: int) -> None:
        checkpoint = ray.train.Checkpoint.from_directory(folder) if folder else None
        ray.train.report(metrics, checkpoint=checkpoint, checkpoint_dir_name=checkpoint_folder_name(epoch))


class InProcessSession:
    """The trial's own process, the only rank: the GPU share Ray gave it (it sets CUDA_VISIBLE_DEVICES) or the CPU."""

    def __init__(self, experiment_dir: str, run_name: str, metric: str, mode: str, keep: int):
        self.rank, self.world_size = 0, 1
        self.device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
        self.metric = metric
        self.store = CheckpointStore(run_location(experiment_dir, run_name), metric, mode, keep)

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        return model.to(self.device)

    def latest_checkpoint(self):
        return self.store.latest()

    def report(self, metrics: dict, folder: str | None, epoch: int) -> None:
        if folder:
            metrics[CHECKPOINT_KEY] = self.store.save(folder, epoch, metrics.get(self.metric))
        ray.tune.report(metrics)


def session_for(config: dict):
    where = config.get("in_process")
    if not where:
        return TrainGroupSession()
    return InProcessSession(where["experiment_dir"], where["run_name"], where["metric"], where["mode"], where["keep"])
