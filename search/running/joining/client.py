"""`address=ray://host:port`: a search sent from outside the cluster through Ray Client.

Tune's driver-side work (callbacks, the files they write, the live view) cannot live in a Ray Client, so the whole
`run` command runs as one task on the head node (the client server's node). What it prints comes back here line by
line through a queue; Ray's own log lines stay on the cluster, as they stay in search.log on a local run.
"""

from __future__ import annotations

import contextlib
import io
import logging
import time

import ray
from ray.util.queue import Empty, Queue
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from search.running.joining.cluster import (
    client_host_port,
    is_client_server_start_failure,
    project_runtime_env,
    refuse_unreachable,
)
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import RemoteCommandFailed, SearchFailed, SearchInterrupted, UsageError
from trainables.foundation.storage import experiment_of


def run_through_ray_client(config: RunConfig, args: list[str], command) -> int:
    """Run `command` (the `run` command: words -> exit code) as one task on the cluster's head node."""
    refuse_unreachable(config.address, client_host_port(config.address))
    connect_client(config.address)
    # The name announced here; inside the cluster the search finds its Ray through the task it runs in.
    remote_args = [*args, f"name={config.name}", "address=auto"]
    try:
        lines = Queue(actor_options={"num_cpus": 0})
        head = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        run = ray.remote(run_command_on_cluster).options(num_cpus=0, max_retries=0, scheduling_strategy=head)
        task = run.remote(command, remote_args, lines)
        try:
            code, error = follow(task, lines)
        except KeyboardInterrupt:
            ray.cancel(task)  # a KeyboardInterrupt inside the task: the search stops as on Ctrl-C and says so
            code, error = interrupted_outcome(task, lines, experiment_of(config.storage, config.name).location)
    finally:
        ray.shutdown()  # disconnects the client; the cluster stays up
    if error:
        raise RemoteCommandFailed(code, error)
    return code


def connect_client(address: str, attempts: int = 3) -> None:
    """Ray Client's proxy starts a server process per client; that start can fail (when gRPC threads are busy
    during its fork) and a second try succeeds: try again before giving up."""
    for attempt in range(1, attempts + 1):
        try:
            ray.init(
                address=address, runtime_env=project_runtime_env(), log_to_driver=False, logging_level=logging.ERROR
            )
            return
        except ConnectionAbortedError as exc:
            if attempt == attempts or not is_client_server_start_failure(str(exc)):
                raise
            time.sleep(2.0)


def follow(task, lines: Queue) -> tuple[int, str]:
    """Print the task's lines as they come, until it returns (exit code, error line)."""
    while True:
        done, _ = ray.wait([task], timeout=0.5)
        print_waiting_lines(lines)
        if done:
            return ray.get(task)


def print_waiting_lines(lines: Queue) -> None:
    while True:
        try:
            print(lines.get_nowait(), flush=True)
        except Empty:
            return


def interrupted_outcome(task, lines: Queue, location: str, timeout_s: float = 120.0) -> tuple[int, str]:
    """The cancelled task's own outcome (it stops like a search on Ctrl-C), or "interrupted" when it ended without
    one (cancelled before it ran) or does not end within `timeout_s`."""
    ready, _ = ray.wait([task], timeout=timeout_s)
    print_waiting_lines(lines)
    if ready:
        try:
            return ray.get(task)
        except (ray.exceptions.TaskCancelledError, ray.exceptions.RayTaskError):
            pass
    return SearchInterrupted.exit_code, str(SearchInterrupted(location))


class LinesToQueue(io.TextIOBase):
    """A stdout that sends every complete line to the client's queue."""

    def __init__(self, lines: Queue):
        self.lines, self.pending = lines, ""

    def write(self, text: str) -> int:
        self.pending += text
        *complete, self.pending = self.pending.split("\n")
        for line in complete:
            self.lines.put(line)
        return len(text)

    def close_line(self) -> None:
        if self.pending:
            self.lines.put(self.pending)
            self.pending = ""


def run_command_on_cluster(command, args: list[str], lines: Queue) -> tuple[int, str]:
    """The task: the command with its output sent to the client; returns its exit code and error line."""
    out = LinesToQueue(lines)
    try:
        with contextlib.redirect_stdout(out):
            return command(args), ""
    except (UsageError, SearchFailed, SearchInterrupted) as error:
        return error.exit_code, str(error)
    finally:
        out.close_line()
