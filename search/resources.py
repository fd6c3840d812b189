"""Will a trial's worker group ever be scheduled, and how many trials fit side by side?

Ray Train waits for resources forever; the search checks first and refuses a shape that can never fit.
Pure logic over per-node resource dicts (as `ray.nodes()` reports them), no Ray import.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from search.errors import UsageError


@dataclass(frozen=True)
class TrialShape:
    workers: int
    cpus_per_worker: float
    gpus_per_worker: float

    @classmethod
    def of(cls, config) -> "TrialShape":
        """The shape a RunConfig asks for (gpus already resolved from 'auto')."""
        return cls(workers=config.workers, cpus_per_worker=config.cpus, gpus_per_worker=config.gpus or 0)

    def describe(self) -> str:
        gpu = f" and {self.gpus_per_worker:g} GPU" if self.gpus_per_worker else ""
        return f"workers={self.workers} x ({self.cpus_per_worker:g} CPU{gpu})"


def workers_fitting_on(node: dict, shape: TrialShape) -> int:
    """How many training workers of `shape` one node can hold at once."""
    fits = math.floor(node.get("CPU", 0) / shape.cpus_per_worker + 1e-9)
    if shape.gpus_per_worker:
        fits = min(fits, math.floor(node.get("GPU", 0) / shape.gpus_per_worker + 1e-9))
    return max(fits, 0)


def trials_that_fit(nodes: list[dict], shape: TrialShape) -> int:
    """Whole trials the cluster holds at once (a trial's workers may spread over nodes)."""
    slots = sum(workers_fitting_on(node, shape) for node in nodes)
    return slots // shape.workers


def plan_concurrency(nodes: list[dict], shape: TrialShape, requested: int) -> int:
    """Trials to run side by side: `requested`, or all that fit when 0. Refuses a shape that never fits."""
    fit = trials_that_fit(nodes, shape)
    if fit == 0:
        raise UsageError(_never_fits_message(nodes, shape))
    return min(requested, fit) if requested else fit


def _never_fits_message(nodes: list[dict], shape: TrialShape) -> str:
    total_cpu = sum(n.get("CPU", 0) for n in nodes)
    total_gpu = sum(n.get("GPU", 0) for n in nodes)
    asked_cpu = shape.workers * shape.cpus_per_worker
    asked_gpu = shape.workers * shape.gpus_per_worker
    asked = f"{asked_cpu:g} CPUs" + (f" and {asked_gpu:g} GPUs" if asked_gpu else "")
    have = f"{total_cpu:g} CPUs and {total_gpu:g} GPUs on {len(nodes)} node{'s' if len(nodes) != 1 else ''}"
    return (
        f"{shape.describe()}: one trial needs {asked} but the cluster has {have}; "
        f"lower workers=, cpus= or gpus=, or add nodes"
    )


def local_cpu_count() -> int:
    """CPUs this process may use (respects affinity masks, as Ray does)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
