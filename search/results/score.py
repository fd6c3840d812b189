"""A trial's score: the one definition that the study, the summary, the live view, TensorBoard and export share.

The epoch that stands for a trial is its last one when its learning rate anneals (`lr_schedule=onecycle` or
`cosine`): earlier epochs are taken at a high learning rate, and 600 validation digits overrate them (measured:
0.5-1.0 pt above their test accuracy, while the annealed final ones match it). Otherwise it is its best epoch by the
metric (early stopping; the latest among ties). The trial's score is that epoch's metric. Pure logic, no Ray.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from trainables.foundation.schedules import ANNEALING_SCHEDULES


def is_finite_number(value) -> bool:
    """A real number, finite; booleans are not numbers here."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def anneals(config: dict) -> bool:
    return config.get("lr_schedule") in ANNEALING_SCHEDULES


def standing_row(
    rows: Iterable[dict], config: dict, metric: str, mode: str, usable: Callable[[dict], bool] = lambda row: True
) -> dict | None:
    """The row (one epoch) that stands for the trial, among the rows with a finite metric that are `usable` (the
    summary asks for a checkpoint still in storage)."""
    candidates = [row for row in rows if is_finite_number(row.get(metric)) and usable(row)]
    if not candidates:
        return None
    if anneals(config):
        return max(candidates, key=lambda row: int(row.get("epoch", 0)))
    sign = 1 if mode == "max" else -1
    return max(reversed(candidates), key=lambda row: sign * row[metric])  # the latest among ties


def score(rows: Iterable[dict], config: dict, metric: str, mode: str) -> float | None:
    row = standing_row(rows, config, metric, mode)
    return float(row[metric]) if row else None
