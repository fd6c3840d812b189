"""The Pareto front of trials with several objectives: non-dominated sorting (as NSGA-II and Syne Tune's MOASHA do),
crowding distance to order within a front, the hypervolume a front dominates (every objective minimised:
`as_minimised`), and a summary's front with the member `export` picks from it. Pure logic: no Ray, no torch."""

from __future__ import annotations

from collections.abc import Sequence

from trainables.foundation.errors import UsageError
from trainables.foundation.objectives import Bound


def as_minimised(point: Sequence[float], modes: Sequence[str]) -> tuple[float, ...]:
    return tuple(-v if mode == "max" else v for v, mode in zip(point, modes))


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """`a` is no worse than `b` in every (minimised) objective and better in one."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def nondominated_ranks(points: Sequence[Sequence[float]]) -> list[int]:
    """Each point's front: 0 for the non-dominated ones, 1 for those only they dominate, and so on."""
    ranks, left, rank = [0] * len(points), set(range(len(points))), 0
    while left:
        front = {i for i in left if not any(dominates(points[j], points[i]) for j in left if j != i)}
        for i in front:
            ranks[i] = rank
        left -= front
        rank += 1
    return ranks


def crowding(points: Sequence[Sequence[float]], members: Sequence[int]) -> dict[int, float]:
    """NSGA-II's crowding distance of each member within its front (the extremes: infinite)."""
    distance = dict.fromkeys(members, 0.0)
    if len(members) <= 2:
        return dict.fromkeys(members, float("inf"))
    for k in range(len(points[members[0]])):
        ordered = sorted(members, key=lambda i: points[i][k])
        low, high = points[ordered[0]][k], points[ordered[-1]][k]
        distance[ordered[0]] = distance[ordered[-1]] = float("inf")
        if high == low:
            continue
        for before, here, after in zip(ordered, ordered[1:], ordered[2:]):
            distance[here] += (points[after][k] - points[before][k]) / (high - low)
    return distance


def pareto_order(points: Sequence[Sequence[float]]) -> list[int]:
    """Indices best first: by front, then by crowding distance (wider spread first), then by index."""
    ranks = nondominated_ranks(points)
    spread = {}
    for rank in set(ranks):
        spread.update(crowding(points, [i for i, r in enumerate(ranks) if r == rank]))
    return sorted(range(len(points)), key=lambda i: (ranks[i], -spread[i], i))


def front(points: Sequence[Sequence[float]]) -> list[int]:
    """The indices of the non-dominated points."""
    return [i for i, rank in enumerate(nondominated_ranks(points)) if rank == 0]


def hypervolume(points: Sequence[Sequence[float]], reference: Sequence[float]) -> float:
    """The volume the (minimised) points dominate up to `reference`, exactly (slicing: fine for the fronts of a
    search, tens of points). Points not better than the reference in every objective add nothing."""
    inside = [tuple(p) for p in points if all(x < r for x, r in zip(p, reference))]
    if not inside:
        return 0.0
    if len(reference) == 1:
        return reference[0] - min(p[0] for p in inside)
    volume, ordered = 0.0, sorted(set(inside), key=lambda p: p[0])
    for i, point in enumerate(ordered):
        width = (ordered[i + 1][0] if i + 1 < len(ordered) else reference[0]) - point[0]
        if width > 0:
            volume += width * hypervolume([p[1:] for p in ordered[: i + 1]], reference[1:])
    return volume


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
