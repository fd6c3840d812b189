"""What a worker asks of Ray: its rank and device, the model's wrapping, where epochs and checkpoints go.

Two kinds of trial: a Ray Train DDP group (several workers), and a one-worker trial that trains inside its own Tune
trial process (Ray Train's local mode), where `ray.train.get_context`, `prepare_model` and `ray.train.report` are
not available, so results go to Tune directly.

Both keep their checkpoints in the same `CheckpointStore` (`train_<id>/checkpoint_epoch_NNNN`, complete once marked)
and their epochs in the trial's own `result.json`, in this order: the checkpoint, then its row, then Tune hears of the
epoch. So a search killed at any moment leaves files that know at least what Tune, and the study, knew
(`trainables.foundation.trial_files`). On a URI, each of those writes waits on the lease of the driver that started
the trial: a trial whose driver lost it (a stall, then another driver's takeover) stops without writing
(`trainables.foundation.trial_lease`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import ray.train
import ray.train.torch
import ray.tune
import torch

from trainables.checkpoints import CheckpointStore, run_location
from trainables.foundation.trial_files import CHECKPOINT_KEY, TrialFiles
from trainables.foundation.trial_lease import trial_lease


def checkpoint_store(output: dict) -> CheckpointStore:
    location = run_location(output["experiment_dir"], output["run_name"])
    return CheckpointStore(location, output["metric"], output["mode"], output["keep"])


class EpochWriter:
    """Rank 0's writer of the trial's checkpoints and epochs (the other ranks only read the latest checkpoint)."""

    def __init__(self, output: dict):
        self.experiment_dir, self.trial_id = output["experiment_dir"], output["trial_id"]
        self.store = checkpoint_store(output)
        self.files = TrialFiles(output["experiment_dir"], output["trial_id"])
        self.lease = trial_lease(output["experiment_dir"])  # the driver's that started it, read before each write
        self.rows = self.files.rows()
        self.extra = {"trial_id": output["trial_id"], "pid": output.get("trial_pid"), "config": output.get("hp", {})}
        self.started_at, self.time_base = output.get("driver_started_at") or time.time(), output.get("time_base", 0.0)

    def keep(self, metrics: dict, write: Callable[[Path], None] | None, epoch: int) -> None:
        """The epoch's checkpoint (when `write` is given: it writes one into a folder), then its row; adds the
        checkpoint's path and the seconds it took to `metrics`."""
        self.fence()
        if write:
            saving = time.perf_counter()
            metrics[CHECKPOINT_KEY] = self.store.save(write, epoch, metrics.get(self.store.metric))
            metrics["checkpoint_s"] = time.perf_counter() - saving
        row = {**metrics, **self.extra, "time_total_s": self.time_base + time.time() - self.started_at}
        if write:  # read again after the checkpoint (a write that may take long)
            self.fence()
        self.rows = self.files.append(self.rows, row)

    def fence(self) -> None:
        """`TrialFenced` once the driver that started this trial no longer holds the experiment's lease."""
        if self.lease is not None:
            self.lease.check()


class TrainGroupSession:
    """A rank of a Ray Train worker group: Train hands each epoch's metrics to Tune (TuneReportCallback); rank 0
    keeps the trial's checkpoints and rows."""

    def __init__(self, output: dict):
        context = ray.train.get_context()
        self.rank, self.world_size = context.get_world_rank(), context.get_world_size()
        self.device = ray.train.torch.get_device()
        self.writer = EpochWriter(output) if self.rank == 0 else None
        self.store = (
            self.writer.store
            if self.writer
            else CheckpointStore(
                run_location(output["experiment_dir"], output["run_name"]),
                output["metric"],
                output["mode"],
                output["keep"],
            )
        )

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        """On the device, wrapped in DistributedDataParallel."""
        return ray.train.torch.prepare_model(model)

    def latest_checkpoint(self):
        return self.store.latest()

    def report(self, metrics: dict, write: Callable[[Path], None] | None, epoch: int) -> None:
        if self.writer:
            self.writer.keep(metrics, write, epoch)
        ray.train.report(metrics)  # every rank: a barrier; Tune hears rank 0's


class InProcessSession:
    """The trial's own process, the only rank: the GPU share Ray gave it (it sets CUDA_VISIBLE_DEVICES) or the CPU."""

    def __init__(self, output: dict):
        self.rank, self.world_size = 0, 1
        self.device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
        self.writer = EpochWriter(output)
        self.store = self.writer.store

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        return model.to(self.device)

    def latest_checkpoint(self):
        return self.store.latest()

    def report(self, metrics: dict, write: Callable[[Path], None] | None, epoch: int) -> None:
        self.writer.keep(metrics, write, epoch)
        ray.tune.report(metrics)


def session_for(config: dict):
    output = config["output"]
    return InProcessSession(output) if config.get("in_process") else TrainGroupSession(output)
