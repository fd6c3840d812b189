"""Plain PyTorch pieces of a trial (batches, epochs, evaluation, checkpoints); no Ray."""

from __future__ import annotations

import json
import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from trainables.augment import random_rotations, random_shifts
from trainables.foundation.choices import OPTIMIZER_NAMES
from trainables.foundation.schedules import ANNEALING_SCHEDULES, LR_SCHEDULES, ONECYCLE_WARMUP

MODEL_FILE = "model.pt"
OPTIMIZER_FILE = "optimizer.pt"
STATE_FILE = "state.json"


@dataclass
class Split:
    """One split in memory: uint8 images [N, C, H, W] and int64 labels, on the training device."""

    images: torch.Tensor
    labels: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor

    @classmethod
    def from_arrays(cls, images, labels, mean, std, device) -> Split:
        shape = (1, len(mean)) + (1,) * (images.ndim - 2)  # [N, C, H, W], or [N, C, L] for sequences
        return cls(
            images=torch.from_numpy(images.copy()).to(device),
            labels=torch.from_numpy(labels.copy()).to(device),
            mean=torch.tensor(mean, device=device).view(shape),
            std=torch.tensor(std, device=device).view(shape),
        )

    def __len__(self) -> int:
        return len(self.labels)

    def batch(self, index: torch.Tensor, shift: int = 0, generator: torch.Generator | None = None, rotate: float = 0.0):
        images = self.images[index].float().div_(255.0)
        if rotate:
            images = random_rotations(images, rotate, shift, generator)
        elif shift:
            images = random_shifts(images, shift, generator)
        return (images - self.mean) / self.std, self.labels[index]

    def batches(
        self,
        index: torch.Tensor,
        batch_size: int,
        shift: int = 0,
        generator: torch.Generator | None = None,
        rotate: float = 0.0,
    ):
        """(images, labels) of `index`, `batch_size` at a time, with augmentation drawn from `generator`."""
        for chunk in index.to(self.labels.device).split(batch_size):
            yield self.batch(chunk, shift, generator, rotate)


def shard_indices(n: int, rank: int, world_size: int, seed: int | None) -> torch.Tensor:
    """This rank's share of `n` samples: every world_size-th of a seeded permutation, cut to equal length so every
    rank runs the same number of steps, as DDP requires; evaluation shards (seed None) cover every sample once."""
    if seed is None:
        return torch.arange(rank, n, world_size)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    return order[rank::world_size][: n // world_size]


def make_optimizer(hp: dict, model: nn.Module) -> torch.optim.Optimizer:
    name, params = hp.get("optimizer", "sgd"), model.parameters()
    lr, weight_decay = hp["lr"], hp.get("weight_decay", 0.0)
    if name == "sgd":
        momentum = hp.get("momentum", 0.0)
        nesterov = bool(hp.get("nesterov", False)) and momentum > 0
        return torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov)
    if name in ("adam", "adamw"):
        return {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name](params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"optimizer={name}: allowed values are {', '.join(OPTIMIZER_NAMES)}")


class LearningRate:
    """The learning-rate schedule of a trial (`lr_schedule`: none, plateau, onecycle, cosine); `cycle_ends`: epochs
    where a per-step schedule ends and starts again, so that a score taken there is an annealed one."""

    def __init__(
        self, hp: dict, optimizer, epochs: int, steps_per_epoch: int, first_epoch: int = 1, cycle_ends: tuple = ()
    ):
        name = hp.get("lr_schedule", "none")
        if name not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule={name}: allowed values are {', '.join(LR_SCHEDULES)}")
        self.hp, self.optimizer, self.name, self.steps_per_epoch = hp, optimizer, name, steps_per_epoch
        self.per_step, self.per_epoch = None, None
        ends = [e * steps_per_epoch for e in sorted({e for e in cycle_ends if 0 < e < epochs} | {max(1, epochs)})]
        self.next_end = dict(zip(ends, ends[1:]))  # in steps: where a cycle ends -> where the next one ends
        self.step_count = 0
        if name == "plateau":
            self.per_epoch = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.1, patience=1)
        elif name in ANNEALING_SCHEDULES:
            self.per_step = self.cycle(0, ends[0])
        if self.per_step is not None and first_epoch > 1:
            with warnings.catch_warnings():  # moving the schedule on before any optimizer step is the point here
                warnings.simplefilter("ignore", UserWarning)
                for _ in range((first_epoch - 1) * steps_per_epoch):
                    self.after_step()

    def cycle(self, start: int, end: int):
        """A fresh per-step schedule over the steps [start, end)."""
        total = max(1, end - start)
        if self.name == "onecycle":  # torch's OneCycleLR divides by zero below 8 steps (tiny data): stretched there
            return torch.optim.lr_scheduler.OneCycleLR(
                self.optimizer, max_lr=self.hp["lr"], total_steps=max(total, 8), pct_start=ONECYCLE_WARMUP
            )
        warmup = max(1, min(self.steps_per_epoch, total - 1))
        return torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda step: cosine_with_warmup(step, warmup, total))

    def after_step(self) -> None:
        if self.per_step is None:
            return
        self.step_count += 1
        if self.step_count in self.next_end:  # a cycle ends: the next one starts from its warm-up
            self.per_step = self.cycle(self.step_count, self.next_end[self.step_count])
        else:
            self.per_step.step()

    def after_epoch(self, val_loss: float) -> None:
        if self.per_epoch is not None:
            self.per_epoch.step(val_loss)


def cosine_with_warmup(step: int, warmup: int, total: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def load_matching_weights(model: nn.Module, path: str | Path) -> list[str]:
    """Load pretrained weights into every layer whose shape matches; returns the keys skipped (typically the head)."""
    state = torch.load(Path(path), map_location="cpu", weights_only=True)
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    own = model.state_dict()
    usable = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    if not usable:
        raise ValueError(f"{path}: no tensor in this file matches the model (is it a state_dict of the same network?)")
    model.load_state_dict(usable, strict=False)
    return sorted(set(own) - set(usable))


def per_rank_batch_size(batch_size: int, world_size: int) -> int:
    """`batch_size` is the global batch; each rank takes its share (at least one sample)."""
    return max(1, batch_size // world_size)


@dataclass(frozen=True)
class StepOptions:
    """How a training batch goes through the model: the images' memory layout and the autocast dtype."""

    channels_last: bool = False
    precision: str = "fp32"
    label_smoothing: float = 0.0

    @classmethod
    def of(cls, run, hp: dict | None = None) -> StepOptions:
        return cls(run.channels_last, run.precision, float((hp or {}).get("label_smoothing", 0.0)))

    def layout(self, images: torch.Tensor) -> torch.Tensor:
        if self.channels_last and images.dim() == 4:
            return images.contiguous(memory_format=torch.channels_last)
        return images

    def autocast(self, device: torch.device):
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=self.precision == "bf16")


def train_one_epoch(
    model, optimizer, batches, device, options: StepOptions = StepOptions(), after_step=None, step=None
) -> dict:
    """One pass over this rank's batches: the summed loss, sample count and seconds spent."""
    model.train()
    loss_sum = torch.zeros((), device=device, dtype=torch.float64)
    count = 0
    start = time.perf_counter()
    for images, labels in batches:
        images, labels = options.layout(images.to(device, non_blocking=True)), labels.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with options.autocast(device):
            if step is None:
                loss = F.cross_entropy(model(images), labels, label_smoothing=options.label_smoothing)
            else:
                loss = step(model, images, labels)
        loss.backward()
        optimizer.step()
        if after_step is not None:
            after_step()
        loss_sum += loss.detach().double() * len(labels)
        count += len(labels)
    return {"loss_sum": loss_sum, "count": count, "seconds": time.perf_counter() - start}


@torch.no_grad()
def evaluate(model, batches, device, options: StepOptions = StepOptions(), keep: bool = False) -> dict:
    """Summed loss and correct predictions (sums reduce across ranks), always in fp32, as the saved weights run;
    with `keep`, also every batch's `logits` and `labels` (for figures of the whole split: trainables.metrics)."""
    model.eval()
    loss_sum = torch.zeros((), device=device, dtype=torch.float64)
    correct = torch.zeros((), device=device, dtype=torch.float64)
    count, kept = 0, []
    for images, labels in batches:
        images, labels = options.layout(images.to(device, non_blocking=True)), labels.to(device, non_blocking=True)
        logits = model(images)
        loss_sum += F.cross_entropy(logits, labels, reduction="sum").double()
        correct += (logits.argmax(dim=1) == labels).sum().double()
        count += len(labels)
        if keep:
            kept.append((logits.float(), labels))
    stats = {"loss_sum": loss_sum, "correct": correct, "count": count}
    if keep:  # a share without samples still has a logits matrix (0 x 0), for the gathering across ranks
        stats["logits"] = torch.cat([k[0] for k in kept]) if kept else torch.zeros((0, 0), device=device)
        stats["labels"] = torch.cat([k[1] for k in kept]) if kept else torch.zeros(0, dtype=torch.int64, device=device)
    return stats


def prepare_layout(model: nn.Module, options: StepOptions) -> nn.Module:
    """The model in the memory layout its images come in."""
    return model.to(memory_format=torch.channels_last) if options.channels_last else model


def unwrap(model: nn.Module) -> nn.Module:
    """The plain network inside torch.compile's and DistributedDataParallel's wrappers."""
    model = getattr(model, "_orig_mod", model)
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


def save_checkpoint(directory: str | Path, model: nn.Module, optimizer, epoch: int, metrics: dict, hp: dict) -> None:
    directory = Path(directory)
    torch.save(model.state_dict(), directory / MODEL_FILE)
    torch.save(optimizer.state_dict(), directory / OPTIMIZER_FILE)
    state = {"epoch": epoch, "metrics": metrics, "hyperparameters": hp}
    (directory / STATE_FILE).write_text(json.dumps(state, indent=2, default=str))


def read_checkpoint_state(directory: str | Path) -> dict:
    return json.loads((Path(directory) / STATE_FILE).read_text())


def load_model_weights(directory: str | Path, model: nn.Module) -> None:
    state_dict = torch.load(Path(directory) / MODEL_FILE, map_location="cpu", weights_only=True)
    model.load_state_dict(state_dict)


def load_optimizer_state(directory: str | Path) -> dict:
    """The optimizer's state dict saved in a checkpoint folder (load it once the optimizer exists)."""
    return torch.load(Path(directory) / OPTIMIZER_FILE, map_location="cpu", weights_only=True)
