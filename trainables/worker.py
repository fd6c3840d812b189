"""The training loop that runs on every Ray Train worker (rank) of a trial."""

from __future__ import annotations

import math
import tempfile
import time

import ray.train
import ray.train.torch
import torch
import torch.distributed as dist

from search.config import RunConfig
from search.space import load_space
from trainables.data import get_dataset
from trainables.training import (
    Split,
    evaluate,
    load_model_weights,
    load_optimizer_state,
    make_optimizer,
    per_rank_batch_size,
    read_checkpoint_state,
    save_checkpoint,
    shard_indices,
    train_one_epoch,
)


def train_fn_per_worker(config: dict) -> None:
    run = RunConfig.from_dict(config["run"])
    hp = config["hp"]
    space = load_space(run.space)

    # 1. This worker's place in the group and its device (a GPU when the trial has them).
    context = ray.train.get_context()
    rank, world_size = context.get_world_rank(), context.get_world_size()
    device = ray.train.torch.get_device()

    torch.manual_seed(run.seed)
    train_split, val_split = load_splits(space.dataset, run, device)
    model = space.build_model(hp)

    # 2. After a worker failure Ray Train restarts the group from the latest checkpoint.
    checkpoint = ray.train.get_checkpoint()
    first_epoch = 1
    if checkpoint:
        with checkpoint.as_directory() as directory:
            load_model_weights(directory, model)
            first_epoch = read_checkpoint_state(directory)["epoch"] + 1

    # 3. Move the model to the device and wrap it in DistributedDataParallel.
    model = ray.train.torch.prepare_model(model)
    optimizer = make_optimizer(hp, model)
    if checkpoint:
        with checkpoint.as_directory() as directory:
            load_optimizer_state(directory, optimizer)

    batch_size = per_rank_batch_size(hp["batch_size"], world_size)
    val_index = shard_indices(len(val_split), rank, world_size, seed=None)
    for epoch in range(first_epoch, run.epochs + 1):
        epoch_start = time.perf_counter()
        train_index = shard_indices(len(train_split), rank, world_size, seed=run.seed * 100_003 + epoch)
        train_stats = train_one_epoch(model, optimizer, train_split, train_index, batch_size)
        broadcast_buffers_from_rank0(model)
        val_stats = evaluate(unwrap(model), val_split, val_index)
        metrics = reduce_epoch_metrics(train_stats, val_stats, device)
        metrics.update(epoch=epoch, lr=optimizer.param_groups[0]["lr"], epoch_s=time.perf_counter() - epoch_start)
        metrics["resumed_from"] = first_epoch - 1  # the checkpoint's epoch this run continued from (0: none)
        metrics["diverged"] = not all(map(math.isfinite, (metrics["train_loss"], metrics["val_loss"])))

        # 4. Every rank reports (a barrier); rank 0 attaches the checkpoint of this epoch.
        with tempfile.TemporaryDirectory() as directory:
            epoch_checkpoint = None
            if rank == 0 and not metrics["diverged"]:
                save_checkpoint(directory, unwrap(model), optimizer, epoch, metrics, hp)
                epoch_checkpoint = ray.train.Checkpoint.from_directory(directory)
            ray.train.report(metrics, checkpoint=epoch_checkpoint, checkpoint_dir_name=f"checkpoint_epoch_{epoch:04d}")
        if metrics["diverged"]:
            return  # the trial driver turns this into a failed trial with the reason


def load_splits(dataset_name: str, run: RunConfig, device: torch.device) -> tuple[Split, Split]:
    dataset = get_dataset(dataset_name)
    splits = []
    for train, limit in ((True, run.data.limit), (False, run.data.val_limit)):
        images, labels = dataset.load(run.data.root, train=train, limit=limit)
        splits.append(Split.from_arrays(images, labels, dataset.mean, dataset.std, device))
    return splits[0], splits[1]


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    return model.module if hasattr(model, "module") else model


def broadcast_buffers_from_rank0(model: torch.nn.Module) -> None:
    """BatchNorm running statistics drift apart per rank; evaluate and save rank 0's on every rank,
    so the reported accuracy is the accuracy of the saved checkpoint."""
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        for buffer in unwrap(model).buffers():
            dist.broadcast(buffer, src=0)


def reduce_epoch_metrics(train_stats: dict, val_stats: dict, device: torch.device) -> dict:
    """Sum the per-rank counts over the group (Tune only sees rank 0's dict)."""
    sums = torch.stack(
        [
            train_stats["loss_sum"].to(device),
            torch.tensor(float(train_stats["count"]), device=device, dtype=torch.float64),
            val_stats["loss_sum"].to(device),
            val_stats["correct"].to(device),
            torch.tensor(float(val_stats["count"]), device=device, dtype=torch.float64),
        ]
    )
    slowest = torch.tensor([train_stats["seconds"]], device=device, dtype=torch.float64)
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(sums, op=dist.ReduceOp.SUM)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    train_loss_sum, train_count, val_loss_sum, correct, val_count = sums.tolist()
    train_seconds = slowest.item()
    return {
        "train_loss": train_loss_sum / max(train_count, 1),
        "val_loss": val_loss_sum / max(val_count, 1),
        "val_acc": correct / max(val_count, 1),
        "images_per_s": train_count / train_seconds if train_seconds > 0 else 0.0,
        "train_s": train_seconds,
        "train_samples": int(train_count),
        "val_samples": int(val_count),
    }
