"""Every use of Ray's private modules, behind one door, for the Ray version the suite ran on.

Each import says why no public API serves and what breaks without it. Importing this module (the search driver
does, before Ray starts) checks them all: with a Ray whose internals moved, `run` stops at once with one line
naming that Ray version, instead of failing in the middle of a search.
"""

from __future__ import annotations

import ray

from trainables.foundation.errors import UsageError

TESTED_RAY = "2.60.0"

__all__ = [
    "TESTED_RAY",
    "RayInternalsMoved",
    "TrainController",
    "DEFAULT_RAY_WARN_BLOCKING_GET_INSIDE_ASYNC_VALUE",
    "get_env_vars_to_propagate",
    "RAY_WARN_BLOCKING_GET_INSIDE_ASYNC_ENV_VAR",
    "DatasetsCallback",
    "TrainingFramework",
    "get_address_and_port",
    "get_session",
    "NODE_ID_LABEL",
    "local_torch_controller",
    "canonical_bootstrap_address",
    "start_autoscaling_coordinator",
]


class RayInternalsMoved(UsageError):
    """This Ray's internals are not where the tested Ray keeps them."""


try:
    # Train's controller actor. `TrialTrainer` starts it itself, as `DataParallelTrainer.fit` does, to keep a handle
    # on it: Tune stopping a trial (ASHA) must abort the trial's run, and `fit()` offers no abort. Without it a
    # stopped DDP trial's thread waits in `fit()` and Tune kills the whole trial process.
    from ray._common.constants import RAY_WARN_BLOCKING_GET_INSIDE_ASYNC_ENV_VAR

    # The Tune session's stop event: set when Tune finishes a trial's session (an ASHA stop, or the process handed
    # to the next trial). No public API exposes it; without it a stopped DDP trial cannot abort its run.
    from ray.train._internal.session import get_session
    from ray.train._internal.utils import get_address_and_port

    # Train adds this callback to every run; it starts a Ray Data actor per run, which this project (whose workers
    # read their own data) does not use. Left out by type: without it every DDP trial starts one more process.
    from ray.train.v2._internal.callbacks.datasets import DatasetsCallback

    # The environment `DataParallelTrainer` gives that controller; the same, so the controller behaves the same.
    from ray.train.v2._internal.constants import (
        DEFAULT_RAY_WARN_BLOCKING_GET_INSIDE_ASYNC_VALUE,
        get_env_vars_to_propagate,
    )
    from ray.train.v2._internal.execution.controller import TrainController

    # A backend config names its framework, and the process group needs rank 0's address and a free port: what
    # `TorchConfig` uses, whose module imports torch in Train's controller (1.5-2 s of each DDP trial's start).
    from ray.train.v2._internal.util import TrainingFramework

    # The label that pins an actor to a node; the controller is pinned to its trial's node, as Train pins it.
    NODE_ID_LABEL = ray._raylet.RAY_NODE_ID_KEY
except (ImportError, AttributeError) as exc:
    raise RayInternalsMoved(
        f"Ray {ray.__version__} keeps its internals elsewhere than Ray {TESTED_RAY}, which search was tested with "
        f"({type(exc).__name__}: {exc}); install ray[default,train,tune]=={TESTED_RAY}"
    ) from None


def local_torch_controller():
    """Train's local-mode controller for one-worker trials (its module imports torch: only where a trial trains)."""
    from ray.train.v2._internal.execution.local_mode.torch import LocalTorchController

    return LocalTorchController


def canonical_bootstrap_address(address: str) -> str | None:
    """The host:port Ray will dial for `address` (`auto`: the cluster this machine started last). Used to refuse a
    head that does not answer in one line; `ray.init` itself would wait and then raise from deep inside."""
    from ray._private.services import canonicalize_bootstrap_address

    return canonicalize_bootstrap_address(address)


def start_autoscaling_coordinator() -> None:
    """Ray Train's cluster-wide AutoscalingCoordinator actor, started ahead (every run's controller registers with it
    and the first run of a Ray instance waits for its process). Only a head start: the caller ignores a failure."""
    from ray.data._internal.cluster_autoscaler.default_autoscaling_coordinator import (
        get_or_create_autoscaling_coordinator,
    )

    get_or_create_autoscaling_coordinator()
