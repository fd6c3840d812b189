"""Joining Ray for a search: a local instance of this machine's own, or a cluster (its address checked in one line),
and, on a cluster, whether every node sees the experiment's storage and the files a trial opens."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from search.results.tensorboard import free_port
from search.running.clock import clock_prefix
from search.running.joining.cluster import (
    bound_gcs_history,
    check_every_node_sees,
    paths_every_node_needs,
    project_runtime_env,
    refuse_unreachable,
)
from search.running.joining.kept_ray import KeptRay, kept, reusable, stop_kept_ray
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import RayDidNotStart, SearchFailed, UsageError
from trainables.foundation.resources import local_cpu_count
from trainables.foundation.storage import Experiment, delete, read_text, write_text
from trainables.foundation.warm import raylet_environment
from trainables.ray_private import canonical_bootstrap_address  # checks every Ray internal this project uses
from trainables.room import alive_nodes

# Ray Train's placement-group cleaner asks Ray's State API whether a run's controller lives. Without an address the
# State API looks for the Ray instances on this machine, and with two of them (another search, a `ray start`) it
# gives up or picks the newest: the cleaner then dies, or frees nothing, and the next trial waits forever for the
# stopped trial's workers. Every process of the job is told where its own cluster is.
STATE_API_ADDRESS = "RAY_API_SERVER_ADDRESS"


def connect(config: RunConfig) -> bool:
    """Join the cluster at `address` (shipping this project's code to it) or start a local Ray instance; whether the
    caller stops it at the end. False when this process is connected to Ray already (the caller's own `ray.init`, or
    the instance kept for `search.api`'s next search: search.running.joining.kept_ray), and when the instance it
    starts is to be kept. A start that fails is RayDidNotStart: one line, the cause and what to try."""
    address = config.address or ""
    if ray.is_initialized():
        if reusable(address):
            logging.getLogger("ray").info("search uses the Ray connection this process already has")
            if KeptRay.address is not None:
                print(f"{clock_prefix()}search: Ray is up (kept from this process's last search); the trials start")
            return False
        stop_kept_ray()  # kept for a local search, and this one joins a cluster (or the reverse)
    try:
        if config.address:
            join_cluster(config)
        else:
            start_local(config)
    except UsageError:
        raise  # an address refused before Ray was asked
    except Exception as exc:  # Ray raises a bare Exception for a node that timed out during startup
        with contextlib.suppress(Exception):
            ray.shutdown()  # what it started of itself
        raise RayDidNotStart(did_not_start_words(config.address, exc)) from None
    print(f"{clock_prefix()}search: Ray is up; the trials start", flush=True)
    if KeptRay.keep:
        kept(address)
        return False
    return True


def did_not_start_words(address: str | None, exc: Exception) -> str:
    """One line: why Ray did not start or could not be joined, and what to try."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    cause = f"{type(exc).__name__}: {lines[0] if lines else '(no message)'}"
    cause = cause if len(cause) <= 300 else cause[:297] + "..."
    if address:
        return (
            f"Ray: could not join the cluster at address={address} ({cause}); nothing ran: check that the cluster "
            "is up (`ray status` on its head node) and try again"
        )
    return (
        f"Ray: the local Ray instance did not start ({cause}); nothing ran: try again once the machine is less busy "
        "(fewer processes beside it), or join a running cluster with address=HOST:PORT"
    )


def join_cluster(config: RunConfig) -> None:
    address = bootstrap_address(config.address)
    refuse_unreachable(config.address, address)
    runtime_env = {**project_runtime_env(), "env_vars": {"RAY_ADDRESS": address}}  # see STATE_API_ADDRESS
    print(f"{clock_prefix()}search: joining the Ray cluster at {config.address}", flush=True)
    context = ray.init(address=config.address, runtime_env=runtime_env, **ray_logging(config))
    logging.getLogger("ray").info("search joined the Ray cluster at %s", context.address_info.get("address"))


def start_local(config: RunConfig) -> None:
    dashboard_port = free_port()  # a Ray instance that just shut down may still hold the default port
    bound_gcs_history(os.environ)
    logging.getLogger("ray").info("search is starting a local Ray instance")  # its start is timed from here
    print(f"{clock_prefix()}search: starting a local Ray instance (about 20 s)", flush=True)
    # The job asks for no runtime environment, so that Tune's trial processes fit the idle workers Ray prestarts
    # (trainables.foundation.warm); what every worker must know travels in the raylet's environment.
    raylet_env = {STATE_API_ADDRESS: f"http://127.0.0.1:{dashboard_port}", **raylet_environment(os.environ)}
    with environment(raylet_env):
        context = ray.init(
            address="local",
            num_cpus=local_cpu_count(),
            include_dashboard=True,
            dashboard_host="127.0.0.1",
            dashboard_port=dashboard_port,
            **ray_logging(config),
        )
    logging.getLogger("ray").info(
        "search started a local Ray instance, session %s", context.address_info["session_dir"]
    )


def ray_logging(config: RunConfig) -> dict:
    """Workers' output on this terminal only with verbose=1 (a kept instance keeps its first search's choice)."""
    return dict(log_to_driver=bool(config.verbose), logging_level=logging.INFO)


@contextlib.contextmanager
def environment(variables: dict[str, str]):
    """`variables` set in this process's environment while Ray starts its processes (which inherit it), then
    restored: a later search from the same process starts from the environment it had."""
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def bootstrap_address(address: str) -> str:
    """The host:port Ray will really dial for `address` (auto: the cluster this machine started last)."""
    try:
        return canonical_bootstrap_address(address) or address
    except (ConnectionError, ValueError) as exc:
        raise UsageError(f"address={address}: {exc}") from None


@ray.remote(num_cpus=0)
def _paths_this_node_sees(paths: dict[str, str], marker: str, token: str) -> dict[str, bool]:
    seen = {label: os.path.exists(path) for label, path in paths.items()}
    try:
        seen["storage"] = read_text(marker) == token
    except Exception:  # OSError, or pyarrow's errors for a URI this node cannot reach
        seen["storage"] = False
    return seen


def check_paths_on_every_node(config: RunConfig, experiment: Experiment, timeout_s: float = 120.0) -> None:
    """On a multi-node cluster, ask every node whether it reads storage (a file written here, through pyarrow for a
    URI), the data and the other files a trial opens; refuse the search before it starts when one does not."""
    nodes = alive_nodes()
    if len(nodes) < 2:
        return
    paths = paths_every_node_needs(config)
    token = secrets.token_hex(8)
    marker = experiment.join(f".search-probe-{token}")
    write_text(marker, token)
    try:
        probes = {
            f"{node['NodeManagerAddress']} {node['NodeID'][:8]}": _paths_this_node_sees.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
            ).remote(paths, marker, token)
            for node in nodes
        }
        try:
            answers = dict(zip(probes, ray.get(list(probes.values()), timeout=timeout_s)))
        except ray.exceptions.GetTimeoutError:
            raise SearchFailed(
                f"a node of the cluster did not answer within {timeout_s:g} s; see `ray status`"
            ) from None
    finally:
        delete(marker)
    check_every_node_sees(answers, paths)
