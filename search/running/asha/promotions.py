"""ASHA's promotion variant's rule, kept so that finding the trial to resume costs the same at any size of search.

At each rung: every point recorded there, in order, and the trials waiting there (paused, not yet promoted), in the
same order. The trial a free place resumes is the best waiting one in the top 1/reduction of its rung (the earlier
proposal first among equal points), top rung first: at each rung only the best waiting trials are looked at, each
ranked among all the rung's points by bisection. Pure logic: no Ray, no Optuna.
"""

from __future__ import annotations

import bisect
import itertools
import math


class Promotions:
    """The rungs of one search (`milestones`, any order; `max_t`, an end, holds no promotion) as the promotion variant
    reads them. A point is the metric signed so that higher is better; a NaN point ranks last."""

    def __init__(self, milestones, reduction: float, max_t: float):
        self.reduction = reduction
        self.order = sorted((m for m in milestones if m < max_t), reverse=True)  # the top rung first
        self.points: dict[float, list[tuple]] = {m: [] for m in self.order}  # (-point, order, arrival), ascending
        self.waiting: dict[float, list[tuple]] = {m: [] for m in self.order}  # (-point, order, arrival, trial id)
        self.keys: dict[tuple[float, str], tuple] = {}  # (milestone, trial id) -> its (-point, order, arrival)
        self.met: dict[tuple[float, str], int] = {}  # (milestone, trial id) -> the epoch that met it
        self.waits_at: dict[str, float] = {}
        self.arrivals = itertools.count()

    def arrived(self, trial_id: str, milestone: float, point: float, order=None, epoch: int | None = None) -> None:
        """The trial's point at the rung `milestone` (recorded once: a later one at the same rung changes nothing);
        `order`: its place among the search's proposals (its first study number), which ranks equal points as the
        replays' arm does, live and after a resume alike (None: the arrival decides); `epoch`: the one that met the
        rung (13 meets a rung at 12.5: grace 2, reduction 2.5; None: the milestone's)."""
        if milestone in self.points and (milestone, trial_id) not in self.keys:
            rank = math.inf if math.isnan(point) else -point
            key = (rank, math.inf if order is None else order, next(self.arrivals))
            bisect.insort(self.points[milestone], key)
            self.keys[(milestone, trial_id)] = key
            self.met[(milestone, trial_id)] = int(milestone) if epoch is None else epoch

    def pause(self, trial_id: str, milestone: float | None = None) -> None:
        """The trial waits at the rung `milestone` (None: the highest where its point was recorded)."""
        if milestone is None:
            milestone = next((m for m in self.order if (m, trial_id) in self.keys), None)
        key = self.keys.get((milestone, trial_id))
        if key is not None and trial_id not in self.waits_at:
            bisect.insort(self.waiting[milestone], (*key, trial_id))
            self.waits_at[trial_id] = milestone

    def resume(self, trial_id: str) -> int | None:
        """The trial goes on: it waits no more. Returns the epoch that met the rung it waited at (the one its rung
        decision is written under; None: it did not wait)."""
        milestone = self.waits_at.pop(trial_id, None)
        if milestone is None:
            return None
        self.waiting[milestone].remove((*self.keys[(milestone, trial_id)], trial_id))
        return self.met[(milestone, trial_id)]

    def first(self, ready=lambda trial_id: True) -> str | None:
        """The waiting trial a free place resumes now; None: none (a new trial). `ready(trial_id)`: whether a waiting
        trial can be resumed (its pause is recorded)."""
        for milestone in self.order:
            top = int(len(self.points[milestone]) // self.reduction)
            for *key, trial_id in self.waiting[milestone]:
                if bisect.bisect_left(self.points[milestone], tuple(key)) >= top:
                    break  # the best waiting ones first: none after it is in the top either
                if ready(trial_id):
                    return trial_id
        return None

    def best_waiting(self, ready=lambda trial_id: True) -> str | None:
        """The best ready waiting trial of the highest rung any waits at, in its rung's top or not (None: none)."""
        for milestone in self.order:
            found = next((trial_id for *_, trial_id in self.waiting[milestone] if ready(trial_id)), None)
            if found is not None:
                return found
        return None

    def waiting_ids(self) -> set[str]:
        return set(self.waits_at)
