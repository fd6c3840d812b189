"""What a worker asks of Ray: its rank and device, the model's wrapping, where epochs and checkpoints go."""

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


class EpochWriter:
    """Rank 0's writer of the trial's checkpoints and epochs (the other ranks only read the latest checkpoint)."""

    def __init__(self, output: dict):
        self.store = checkpoint_store(output)
        self.files = TrialFiles(output["experiment_dir"], output["trial_id"])
        # the lease of the driver that started it (passed by that driver), read again before each write
        self.lease = trial_lease(output["experiment_dir"], output.get("lease_token"))
        self.rows = self.files.rows()
        self.extra = {"trial_id": output["trial_id"], "pid": output.get("trial_pid"), "config": output.get("hp", {})}
        self.started_at, self.time_base = output.get("driver_started_at") or time.time(), output.get("time_base", 0.0)

    def keep(self, metrics: dict, write: Callable[[Path], None] | None, epoch: int) -> None:
        """The epoch's checkpoint (when `write` is given), then its row; adds the checkpoint's path to `metrics`."""
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


def checkpoint_store(output: dict) -> CheckpointStore:
    location = run_location(output["experiment_dir"], output["run_name"])
    return CheckpointStore(location, output["metric"], output["mode"], output["keep"])


class Session:
    """One rank, of a Ray Train group or the trial's own process; rank 0 keeps the checkpoints and rows."""

    def __init__(self, output: dict, in_process: bool):
        self.in_process = in_process
        if in_process:
            self.rank, self.world_size = 0, 1
            self.device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
        else:
            context = ray.train.get_context()
            self.rank, self.world_size = context.get_world_rank(), context.get_world_size()
            self.device = ray.train.torch.get_device()
        self.writer = EpochWriter(output) if self.rank == 0 else None
        self.store = self.writer.store if self.writer else checkpoint_store(output)

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        """On the device; in a group, wrapped in DistributedDataParallel."""
        return model.to(self.device) if self.in_process else ray.train.torch.prepare_model(model)

    def report(self, metrics: dict, write: Callable[[Path], None] | None, epoch: int) -> None:
        if self.writer:
            self.writer.keep(metrics, write, epoch)
        if self.in_process:
            ray.tune.report(metrics)
        else:
            ray.train.report(metrics)  # every rank: a barrier; Tune hears rank 0's


def session_for(config: dict) -> Session:
    return Session(config["output"], bool(config.get("in_process")))
