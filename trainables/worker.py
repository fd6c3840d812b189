"""The training loop that runs on every Ray Train worker (rank) of a trial."""

from __future__ import annotations

import contextlib
import functools
import math
import time

import ray
import torch
import torch.distributed as dist

from trainables.costs import counted_costs, latency
from trainables.data import get_dataset
from trainables.feeds import make_feed
from trainables.foundation.config import RunConfig
from trainables.foundation.objectives import MEASURED, objectives_of
from trainables.foundation.repeats import training_seed
from trainables.foundation.space import load_run_space
from trainables.metrics import metric_functions, validation_figures
from trainables.models import model_for
from trainables.own_step import training_step
from trainables.session import session_for
from trainables.training import (
    LearningRate,
    StepOptions,
    evaluate,
    load_matching_weights,
    load_model_weights,
    load_optimizer_state,
    make_optimizer,
    prepare_layout,
    read_checkpoint_state,
    save_checkpoint,
    train_one_epoch,
    unwrap,
)


def train_fn_per_worker(config: dict) -> dict:
    """Train one trial's model on this rank; returns the last epoch's metrics."""
    clock = SetupClock(config.get("driver_started_at"), config.get("process_started_at"))
    clock.figures.update({figure: config[figure] for figure in WARM_FIGURES if figure in config})  # how warm
    run = RunConfig.from_dict(config["run"])
    hp = config["hp"]
    space = load_run_space(run)

    # 1. This worker's place in the group and its device (a GPU when the trial has them).
    session = session_for(config)  # a rank of a Ray Train group, or the trial's own process (one worker)
    rank, world_size, device = session.rank, session.world_size, session.device
    if device.type == "cpu":
        torch.set_num_threads(max(1, int(run.cpus)))  # the worker's CPUs are its intra-op threads, no more

    clock.figures["worker_nodes"] = node_of_every_rank()
    torch.manual_seed(training_seed(run.seed, hp))  # a repeat's own seed; the validation split keeps the run's
    feed = make_feed(space, run, hp, rank, world_size, device, skip=run.data.skip)
    clock.lap("data")
    info = get_dataset(space.dataset, run).info(run.data.root, hp)
    model = model_for(space, hp, info)
    step = training_step(space, run.space)  # the space's own loss or step; None: cross-entropy
    if run.model.weights:
        load_matching_weights(model, run.model.weights)
    objectives = objectives_of(run, space)
    figure_functions = metric_functions(space, run)  # val_f1, val_auc or the space's own, of the whole validation split
    costs = counted_costs(model, info) if len(objectives) > 1 else {}  # fixed: every row carries them
    clock.lap("model")

    # 2. After a worker failure (or `resume`) the trial continues from its latest checkpoint.
    first_epoch, optimizer_state = 1, None
    with session.store.latest() as directory:
        if directory:
            load_model_weights(directory, model)
            first_epoch = read_checkpoint_state(directory)["epoch"] + 1
            optimizer_state = load_optimizer_state(directory)

    # 3. Move the model to the device and wrap it in DistributedDataParallel (then compile it, when asked).
    options = StepOptions.of(run, hp)
    model = session.prepare_model(prepare_layout(model, options))
    if run.compile:
        model = torch.compile(model, mode=run.compile_mode)
    optimizer = make_optimizer(hp, model)
    if optimizer_state is not None:
        optimizer.load_state_dict(optimizer_state)
    learning_rate = LearningRate(hp, optimizer, run.epochs, feed.steps_per_epoch(), first_epoch, run.lr_cycle_ends())
    clock.lap("ddp")

    for epoch in range(first_epoch, run.epochs + 1):
        epoch_start = time.perf_counter()
        started_at = time.time()
        with named_out_of_memory(device, hp):
            train_stats = train_one_epoch(
                model, optimizer, feed.train_batches(epoch), device, options, learning_rate.after_step, step
            )
        broadcast_buffers_from_rank0(model)
        val_stats = evaluate(unwrap(model), feed.val_batches(), device, options, keep=bool(figure_functions))
        metrics = reduce_epoch_metrics(train_stats, val_stats, device)
        finite = all(map(math.isfinite, (metrics["train_loss"], metrics["val_loss"])))
        metrics.update(validation_figures(figure_functions, val_stats, finite))  # every rank's share gathered
        metrics.update(epoch=epoch, lr=optimizer.param_groups[0]["lr"], epoch_s=time.perf_counter() - epoch_start)
        measures_latency = any(objective.name in MEASURED for objective in objectives)
        if measures_latency and epoch in (first_epoch, run.epochs):  # at the first rung, and at the end
            costs.update(latency(unwrap(model), info))
        metrics.update(costs)
        metrics["resumed_from"] = first_epoch - 1  # the checkpoint's epoch this run continued from (0: none)
        metrics["started_at"] = started_at  # wall clock, for overhead measurements across trials
        metrics.update(clock.take())  # the run's start-up figures, on its first report only
        metrics["diverged"] = not finite
        if not metrics["diverged"]:
            learning_rate.after_epoch(metrics["val_loss"])

        # 4. Rank 0 writes the epoch's checkpoint and row; every rank reports (a barrier).
        write = None
        if rank == 0 and not metrics["diverged"]:
            write = functools.partial(
                save_checkpoint, model=unwrap(model), optimizer=optimizer, epoch=epoch, metrics=dict(metrics), hp=hp
            )
        session.report(metrics, write, epoch)
        if metrics["diverged"]:
            break  # the trial driver turns this into a failed trial with the reason
    return metrics if first_epoch <= run.epochs else {}


OOM_MARKERS = ("out of memory", "not enough memory", "can't allocate memory", "Cannot allocate memory")


class OutOfMemory(RuntimeError):
    """A training step needed more memory than the trial's device has."""


@contextlib.contextmanager
def named_out_of_memory(device: torch.device, hp: dict):
    """Out of memory in a training step: name it, and what to lower."""
    try:
        yield
    except (torch.OutOfMemoryError, MemoryError, RuntimeError) as exc:
        text = str(exc)
        if not isinstance(exc, (torch.OutOfMemoryError, MemoryError)) and not any(m in text for m in OOM_MARKERS):
            raise
        share = "a larger gpus= share (fewer trials per GPU), " if device.type == "cuda" else ""
        raise OutOfMemory(
            f"out of memory on {device} at batch_size={hp.get('batch_size')}: lower batch_size (fix it with "
            f"batch_size=N), {share}or train fewer trials at once (concurrency=); "
            f"{type(exc).__name__}: {text.strip().splitlines()[0] if text.strip() else ''}"[:600]
        ) from exc


WARM_FIGURES = (
    "warm_imports",
    "torch_found",
    "trial_of_process",
    "rank_warm_imports",
    "import_turn_s",
    "import_turn_held",
)


class SetupClock:
    """Where a run's start-up goes, reported once with its first epoch."""

    def __init__(self, driver_started_at: float | None, process_started_at: float | None = None):
        self.last = time.time()
        self.figures = {"launch_s": self.last - driver_started_at} if driver_started_at else {}
        if process_started_at and driver_started_at:
            self.figures["process_s"] = driver_started_at - process_started_at

    def lap(self, step: str) -> None:
        now = time.time()
        self.figures[f"setup_{step}_s"] = now - self.last
        self.last = now

    def take(self) -> dict:
        figures, self.figures = self.figures, {}
        return figures


def node_of_every_rank() -> list[str]:
    """The Ray node id each rank runs on, in rank order (a trial's workers may span nodes)."""
    own = ray.get_runtime_context().get_node_id()
    if not (dist.is_available() and dist.is_initialized()):
        return [own]
    nodes = [None] * dist.get_world_size()
    dist.all_gather_object(nodes, own)
    return nodes


def broadcast_buffers_from_rank0(model: torch.nn.Module) -> None:
    """BatchNorm statistics drift apart per rank: rank 0's everywhere, so the reported accuracy is the checkpoint's."""
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        for buffer in unwrap(model).buffers():
            dist.broadcast(buffer, src=0)


def reduce_epoch_metrics(train_stats: dict, val_stats: dict, device: torch.device) -> dict:
    """Sum the per-rank counts over the group (Tune only sees rank 0's dict)."""
    values = [train_stats["loss_sum"], train_stats["count"]] + [val_stats[k] for k in ("loss_sum", "correct", "count")]
    sums = torch.stack([torch.as_tensor(value, dtype=torch.float64, device=device) for value in values])
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
