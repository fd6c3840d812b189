"""The lr schedules by name and their warm-ups, for ASHA's first rung past the longest one, without torch."""

from __future__ import annotations

import math

LR_SCHEDULES = ("none", "plateau", "onecycle", "cosine")
ANNEALING_SCHEDULES = ("onecycle", "cosine")  # learning rates that end near zero
ONECYCLE_WARMUP = 0.25  # of all the steps: OneCycle's pct_start
LONG_RUN = 6  # under asha=stop, trials of this many epochs are first compared at epoch 2 at the earliest
PROMOTING_REDUCTION = 2.0  # under asha=promote, half of a rung goes on (benchmarks/HISTORY.md, heldout20k-rungs-tpe-*)


def warmup_epochs(schedule: str, epochs: int) -> float:
    """Epochs of learning-rate warm-up: OneCycle's first quarter of the steps, cosine's first epoch, else none."""
    return {"onecycle": ONECYCLE_WARMUP * epochs, "cosine": min(1.0, epochs)}.get(schedule, 0.0)


def first_rung(epochs: int, schedules: list[str], promoting: bool = False) -> int:
    """ASHA's grace period: the first epoch that ends past every warm-up (1 without one; at most `epochs`). Under
    ASHA's stopping variant (`promoting` false), in trials of `LONG_RUN` epochs or more at least epoch 2: on a tuning
    MLP the first epoch ranked configurations unlike the last, and the search's TPE learnt that ranking from the trials
    stopped there (benchmarks/HISTORY.md, families `grace-tuning`, `heldout20k-grace-confirm`; measured at 9 epochs,
    kept at 1 for 3: 4-8 and 10+ are not). Under the promotion variant a trial paused at a rung is not ended, and
    rungs from epoch 1 with half going on got within 0.5 points sooner (`heldout20k-rungs-tpe-peers-324`)."""
    warm = max((warmup_epochs(s, epochs) for s in schedules), default=0.0)
    floor = 2 if epochs >= LONG_RUN and not promoting else 1
    return max(floor, min(epochs, math.floor(warm) + 1))


def rung_milestones(epochs: int, grace: int, reduction: float) -> list[float]:
    """Where Ray Tune's ASHA compares trials before the last epoch: grace x reduction^k."""
    return [grace * reduction**k for k in range(64) if grace * reduction**k < epochs]


def cycle_ends(epochs: int, grace: int, reduction: float) -> tuple[int, ...]:
    """The epochs at whose end ASHA judges a trial (before the last): where `rung_cycles=true` ends an lr cycle."""
    return tuple(sorted({math.ceil(milestone) for milestone in rung_milestones(epochs, grace, reduction)} - {epochs}))


def schedules_of(constants: dict, hyperparameters: dict, fixed: dict) -> list[str]:
    """The schedules a trial of a space may have: a pinned one, else a searched one's choices, else the constant."""
    if "lr_schedule" in fixed:
        return [fixed["lr_schedule"]]
    if "lr_schedule" in hyperparameters:
        return [str(choice) for choice in getattr(hyperparameters["lr_schedule"], "choices", ())]
    return [constants.get("lr_schedule", "none")]
