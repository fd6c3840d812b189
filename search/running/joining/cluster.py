"""Running on an existing Ray cluster: which address, what code to ship, which paths every node must see.

Pure logic, no Ray import: `search.running.tuner` asks the cluster and hands the answers here.
"""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

from trainables.foundation.errors import UsageError

PROJECT_PACKAGES = ("search", "trainables", "spaces")
LOCAL = "local"
# Ray's own advice: Ray Client "may not work as expected" for Tune and Train; a Ray job is its door for them.
JOB_SUBMIT = "ray job submit --address http://<head>:8265 --working-dir . -- python -m search run ..."


def resolve_address(address: str, environ: dict) -> str:
    """`address=` wins; else RAY_ADDRESS; `local` (or nothing) means: start a Ray instance in this process. A Ray
    Client address (ray://) is refused, naming the Ray job that replaces it."""
    chosen = address or environ.get("RAY_ADDRESS", "")
    if chosen.startswith("ray://"):
        key = "address" if address else "RAY_ADDRESS"
        raise UsageError(
            f"{key}={chosen}: Ray Client is not supported (Ray advises against it for Tune and Train); submit the "
            f"search as a Ray job (`{JOB_SUBMIT}`) or run it on a node of the cluster with address=auto"
        )
    return "" if chosen == LOCAL else chosen


def refuse_unreachable(address: str, host_port: str, timeout_s: float = 10.0) -> None:
    """Ray retries a cluster that does not answer forever; check the head's port first and refuse in one line."""
    host, _, port = host_port.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"address={address}: no Ray cluster answers at {host_port} ({exc}); start one with `ray start --head` "
            f"or give the head's address (host:port or auto)"
        ) from None


# How much history of finished work the GCS of a Ray instance the search starts keeps. With Ray's defaults (100,000
# finished actors, dead workers and tasks each) GCS grew by 1.3 MiB per trial (a trial starts ~7 actors and ~190 actor
# tasks), for thousands of trials; these keep about the last 140 trials' actors and 50 trials' tasks.
GCS_HISTORY_CAPS = {
    "RAY_maximum_gcs_destroyed_actor_cached_count": "1000",
    "RAY_maximum_gcs_dead_worker_cached_count": "1000",
    "RAY_task_events_max_num_task_in_gcs": "10000",
}


def bound_gcs_history(environ) -> None:
    """Give the Ray instance this process is about to start the caps above, unless the user set them."""
    for key, value in GCS_HISTORY_CAPS.items():
        environ.setdefault(key, value)


def project_runtime_env() -> dict:
    """Ship this project's packages to every worker of the job, so the cluster needs only Ray, torch and
    torchvision installed (Ray's `py_modules`)."""
    modules = [str(Path(importlib.util.find_spec(name).submodule_search_locations[0])) for name in PROJECT_PACKAGES]
    return {"py_modules": modules}


def paths_every_node_needs(config) -> dict[str, str]:
    """Paths a trial may open on whichever node its workers land: labelled by the key that names them."""
    paths = {"storage": config.storage, "data.root": config.data.root}
    if Path(config.space).suffix == ".py":
        paths["space"] = config.space
    if config.model.weights:
        paths["model.weights"] = config.model.weights
    return paths


def unseen_paths_message(answers: dict[str, dict[str, bool]], paths: dict[str, str]) -> str | None:
    """One line naming the first path some node cannot see, or None when every node sees every path.
    `answers`: node (ip and id) -> label -> whether that node sees the path (storage: sees the file written here)."""
    for label, path in paths.items():
        blind = sorted(node for node, seen in answers.items() if not seen.get(label, False))
        if not blind:
            continue
        nodes = f"{len(blind)} of {len(answers)} nodes ({', '.join(blind)})"
        if label == "storage" and "://" in path:
            return (
                f"storage={path}: {nodes} cannot read files written there; give every node access to it "
                f"(credentials, endpoint, network)"
            )
        if label == "storage":
            return (
                f"storage={path}: {nodes} cannot see files written here; on a multi-node cluster storage must be "
                f"a folder every node mounts (NFS-style, e.g. /mnt/cluster_storage) or a URI (s3://, gs://)"
            )
        return f"{label}={path}: not found on {nodes}; put it on storage every node mounts"
    return None


def check_every_node_sees(answers: dict[str, dict[str, bool]], paths: dict[str, str]) -> None:
    message = unseen_paths_message(answers, paths)
    if message:
        raise UsageError(message)
