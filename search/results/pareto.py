"""The Pareto front of trials with several objectives: non-dominated sorting (as NSGA-II and Syne Tune's MOASHA do),
crowding distance to order within a front, and the hypervolume a front dominates. Pure logic: no Ray, no torch.

Points are tuples of objective values with their modes ("max"/"min"); internally every objective is minimised.
"""

from __future__ import annotations

from collections.abc import Sequence


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
