"""A multi-worker trial waits here, not in Ray Train, for its worker group, naming what holds it up."""

from __future__ import annotations

import time

import ray
from ray.util.placement_group import placement_group, remove_placement_group

from trainables.foundation.config import RunConfig
from trainables.foundation.resources import TrialShape, plan_concurrency


class NoRoom(RuntimeError):
    """Resources this search does not hold keep a trial from starting."""


def alive_nodes(entry: str = "") -> list[dict]:
    """Every node of the cluster that is alive now, as `ray.nodes()` describes it, or that entry of it ("Resources")."""
    return [node[entry] if entry else node for node in ray.nodes() if node.get("Alive")]


def worker_resources(run: RunConfig) -> dict:
    return {"CPU": run.cpus, "GPU": run.gpus} if run.gpus else {"CPU": run.cpus}


def wait_for_room(settings: RunConfig, poll_s: float = 0.5) -> None:
    shape = TrialShape.of(settings)
    room = placement_group([worker_resources(settings)] * settings.workers, strategy="PACK")
    since = time.monotonic()
    try:
        while not ray.wait([room.ready()], timeout=poll_s)[0]:
            plan_concurrency(alive_nodes("Resources"), shape, 1)  # a node left: refused, not waited for
            if time.monotonic() - since > settings.room_wait:
                raise NoRoom(no_room_message(settings))
    finally:
        remove_placement_group(room)  # handed over to the Train run this trial starts next


def no_room_message(settings: RunConfig) -> str:
    free = {key: value for key, value in ray.available_resources().items() if key in ("CPU", "GPU")}
    return (
        f"no room for {settings.workers} worker(s) x {worker_resources(settings)} for {settings.room_wait:g} s "
        f"(free now: {free}): something outside this search holds the resources (another job, or placement "
        "groups a crashed run left behind)"
    )
