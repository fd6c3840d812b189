"""The Pareto front of a multi-objective search, from its summary's trials, and the member `export` picks from it.
Pure logic: no Ray, no torch."""

from __future__ import annotations

from search.results.pareto import as_minimised, front
from trainables.foundation.errors import UsageError
from trainables.foundation.objectives import Bound


def front_of(trials: list[dict], objectives: list[dict]) -> list[dict]:
    """The non-dominated trials among those that completed with a checkpoint and a value of every objective, most
    accurate (best primary) first: {trial_id, objectives, epoch, checkpoint, config}."""
    names, modes = [o["name"] for o in objectives], [o["mode"] for o in objectives]
    candidates = [
        t
        for t in trials
        if t.get("status") == "completed"
        and t.get("checkpoint")
        and all(isinstance((t.get("objectives") or {}).get(n), (int, float)) for n in names)
    ]
    points = [as_minimised([t["objectives"][n] for n in names], modes) for t in candidates]
    members = [candidates[i] for i in sorted(front(points), key=points.__getitem__)]
    return [
        {
            "trial_id": t["trial_id"],
            "objectives": t["objectives"],
            "epoch": t["best_epoch"],
            "checkpoint": t["checkpoint"],
            "config": t["config"],
        }
        for t in members
    ]


def pick_member(summary: dict, bounds: list[Bound]) -> dict:
    """The front's most accurate member within every bound (the front is kept most accurate first). None fits: a
    UsageError naming the closest member (the least relative excess over the bounds) and its values."""
    members = summary.get("front") or []
    if not members:
        raise UsageError("this experiment has no Pareto front (a search with one objective, or no completed trial)")
    names = [o["name"] for o in summary.get("objectives", [])]
    for bound in bounds:
        if bound.name not in names:
            raise UsageError(f"{bound}: {bound.name} is not an objective of this search ({', '.join(names)})")
    for member in members:
        if all(bound.holds(member["objectives"].get(bound.name)) for bound in bounds):
            return member
    closest = min(members, key=lambda m: sum(b.excess(m["objectives"].get(b.name)) for b in bounds))
    values = ", ".join(f"{b.name}={closest['objectives'].get(b.name):g}" for b in bounds)
    raise UsageError(
        f"no member of the Pareto front meets {' and '.join(map(str, bounds))}; the closest is trial "
        f"{closest['trial_id']} ({values})"
    )
