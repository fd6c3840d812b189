"""What each trial asks Tune for and how many run side by side; no Ray, no torch."""

from __future__ import annotations

from dataclasses import dataclass

# Tune refuses a trial that asks for nothing at all: a multi-worker trial's own process asks for a token of memory.
TOKEN_MEMORY = 64 * 2**20


@dataclass(frozen=True)
class TrialPlacement:
    in_process: bool
    """The trial trains in its own Tune process (one worker) instead of a Ray Train worker group."""
    resources: dict
    """What the Tune trial process itself asks of the cluster (`tune.with_resources`)."""
    max_concurrent: int
    """Trials side by side (`max_concurrent_trials`)."""
    max_failures: int
    """Tune-level restarts of a failed trial (a multi-worker trial's restarts are Ray Train's own)."""


def trains_in_process(workers: int, in_process: bool) -> bool:
    """Whether a trial of this shape trains inside its own Tune process (the same test for Tune and the driver)."""
    return workers == 1 and in_process


def place_trials(
    workers: int, cpus: float, gpus: float, concurrency: int, max_failures: int, in_process: bool = True
) -> TrialPlacement:
    """`in_process=False` gives a one-worker trial a Ray Train worker group like a multi-worker one."""
    if trains_in_process(workers, in_process):
        resources = {"cpu": cpus, "gpu": gpus} if gpus else {"cpu": cpus}
        return TrialPlacement(True, resources, concurrency, max_failures)
    return TrialPlacement(False, {"cpu": 0, "memory": TOKEN_MEMORY}, concurrency, 0)
