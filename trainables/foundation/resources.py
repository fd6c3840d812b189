"""The shape of a trial, chosen to fit the cluster and refused when it never can; no Ray import."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from trainables.foundation.errors import UsageError


@dataclass(frozen=True)
class TrialShape:
    workers: int
    cpus_per_worker: float
    gpus_per_worker: float

    @classmethod
    def of(cls, config) -> TrialShape:
        """The shape a RunConfig asks for (gpus already resolved from 'auto')."""
        return cls(workers=config.workers, cpus_per_worker=config.cpus, gpus_per_worker=config.gpus or 0)

    def keys(self) -> str:
        """The shape as the keys that ask for it."""
        return f"workers={self.workers} cpus={self.cpus_per_worker:g} gpus={self.gpus_per_worker:g}"

    def in_words(self) -> str:
        """e.g. "1 worker x 0.25 GPU and 4 CPUs each"."""
        worker = f"{self.workers} worker{'s' if self.workers > 1 else ''}"
        cpus = f"{self.cpus_per_worker:g} CPU{'s' if self.cpus_per_worker != 1 else ''}"
        each = f"{self.gpus_per_worker:g} GPU and {cpus}" if self.gpus_per_worker else cpus
        return f"{worker} x {each} each"


# Fewer CPU cores than this on a node without GPUs: one worker per trial (DDP over gloo loses, benchmarks/README.md).
DDP_MIN_CORES = 8
# A one-worker trial on a GPU takes this share of it: four small trials on one GPU train faster together (README).
PACKED_GPU_SHARE = 0.25


def most_on_one_node(nodes: list[dict], resource: str) -> float:
    return max((node.get(resource, 0) for node in nodes), default=0)


def choose_shape(
    nodes: list[dict],
    trials: int,
    workers: int | None = None,
    cpus: float | None = None,
    gpus: float | None = None,
    concurrency: int = 0,
) -> TrialShape:
    """The trial shape for this cluster: keys the user gave (not None) win; CPUs per worker split a node's cores among
    the workers that share it."""
    node_gpus, node_cpus = most_on_one_node(nodes, "GPU"), most_on_one_node(nodes, "CPU")
    total_gpus = sum(math.floor(node.get("GPU", 0)) for node in nodes)
    # DDP wherever there are GPUs for two ranks, unless the given share is a part of one GPU (ranks cannot share one)
    whole_gpus = gpus is None or gpus >= 1
    gpu_workers = workers or (2 if total_gpus >= 2 and whole_gpus else 1)
    if gpus is None:
        gpus = 0.0 if node_gpus == 0 else (1.0 if gpu_workers > 1 else PACKED_GPU_SHARE)
    if workers is None:
        workers = gpu_workers if gpus else (2 if node_cpus >= DDP_MIN_CORES else 1)
    if cpus is None:
        at_once = max(1, min(trials, concurrency) if concurrency else trials) * workers  # workers that can run at once
        if gpus:
            sharing = math.floor(node_gpus / gpus + 1e-9) if node_gpus >= gpus else 1
        else:
            sharing = node_cpus if workers == 1 else 4
        sharing = min(sharing, at_once)
        cpus = float(max(1, math.floor(node_cpus / max(1, sharing) + 1e-9)))
    return TrialShape(workers=workers, cpus_per_worker=cpus, gpus_per_worker=gpus)


def check_shape(nodes: list[dict], shape: TrialShape, trials: int) -> None:
    """Refuse, before any trial runs, a shape that cannot work on this cluster, naming a shape that fits."""
    fits = choose_shape(nodes, trials).keys()
    gpus = shape.gpus_per_worker
    if gpus > 1 and gpus != int(gpus):
        raise UsageError(
            f"gpus={gpus:g}: a worker takes a share of one GPU (below 1) or whole GPUs; a shape that fits: {fits}"
        )
    if shape.workers > 1 and 0 < gpus < 1:
        raise UsageError(
            f"workers={shape.workers} gpus={gpus:g}: ranks of one DDP trial would share a GPU, which NCCL refuses "
            f'("Duplicate GPU detected"); give each rank a whole GPU (gpus=1) or pack one-worker trials '
            f"(workers=1 gpus={gpus:g}); a shape that fits: {fits}"
        )
    have = most_on_one_node(nodes, "GPU")
    if gpus > have:
        raise UsageError(
            f"gpus={gpus:g}: no node has {gpus:g} GPU{'s' if gpus != 1 else ''} (the most on one node: "
            f"{have:g}); a shape that fits: {fits}"
        )
    if trials_that_fit(nodes, shape) == 0:
        raise UsageError(f"{_never_fits_message(nodes, shape)}; a shape that fits: {fits}")


def workers_fitting_on(node: dict, shape: TrialShape) -> int:
    """How many training workers of `shape` one node can hold at once."""
    fits = math.floor(node.get("CPU", 0) / shape.cpus_per_worker + 1e-9)
    if shape.gpus_per_worker:
        fits = min(fits, math.floor(node.get("GPU", 0) / shape.gpus_per_worker + 1e-9))
    return max(fits, 0)


def trials_that_fit(nodes: list[dict], shape: TrialShape) -> int:
    """Whole trials the cluster holds at once (a trial's workers may spread over nodes)."""
    return sum(workers_fitting_on(node, shape) for node in nodes) // shape.workers


def plan_concurrency(nodes: list[dict], shape: TrialShape, requested: int) -> int:
    """Trials to run side by side: `requested`, or all that fit when 0. Refuses a shape that never fits."""
    fit = trials_that_fit(nodes, shape)
    if fit == 0:
        raise UsageError(_never_fits_message(nodes, shape))
    return min(requested, fit) if requested else fit


def _never_fits_message(nodes: list[dict], shape: TrialShape) -> str:
    total_cpu, total_gpu = (sum(n.get(kind, 0) for n in nodes) for kind in ("CPU", "GPU"))
    asked_cpu, asked_gpu = shape.workers * shape.cpus_per_worker, shape.workers * shape.gpus_per_worker
    asked = f"{asked_cpu:g} CPUs" + (f" and {asked_gpu:g} GPUs" if asked_gpu else "")
    gpu = f" and {shape.gpus_per_worker:g} GPU" if shape.gpus_per_worker else ""
    have = f"{total_cpu:g} CPUs and {total_gpu:g} GPUs on {len(nodes)} node{'s' if len(nodes) != 1 else ''}"
    return (
        f"workers={shape.workers} x ({shape.cpus_per_worker:g} CPU{gpu}): one trial needs {asked} but the cluster has "
        f"{have}; lower workers=, cpus= or gpus=, or add nodes"
    )


def local_cpu_count() -> int:
    """CPUs this process may use (respects affinity masks, as Ray does)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# Device files that exist where a GPU may: NVIDIA's driver, WSL2's GPU, ROCm's (AMD) kernel driver.
GPU_DEVICE_FILES = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/dxg", "/dev/kfd")


def local_gpu_count(device_files: tuple[str, ...] = GPU_DEVICE_FILES) -> int:
    """GPUs this process may use, as torch counts them; 0 without importing torch (1.4 s) where no GPU file is."""
    if not any(Path(path).exists() for path in device_files):
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def refuse_crashing_gpu_options(config, shape: TrialShape) -> None:
    """Options that crash torch's compiler on a GPU, refused before any trial (on CPU cores they train)."""
    if shape.gpus_per_worker and config.compile and config.precision == "bf16" and config.channels_last:
        raise UsageError(
            "compile=true with precision=bf16 and channels_last=true on a GPU: torch's inductor fails on "
            "this combination (an AssertionError on a convolution's strides, seen with torch 2.11 on an H100); "
            "drop one of the three"
        )


def settle_shape(config, nodes: list[dict]) -> TrialShape:
    """Fill a RunConfig's workers, cpus and gpus left to auto from the cluster's nodes, and check the shape."""
    shape = choose_shape(nodes, config.trials, config.workers, config.cpus, config.gpus, config.concurrency)
    check_shape(nodes, shape, config.trials)
    refuse_crashing_gpu_options(config, shape)
    config.workers, config.cpus, config.gpus = shape.workers, shape.cpus_per_worker, shape.gpus_per_worker
    return shape
