"""Every use of Ray's private modules, behind one door, checked on import against the Ray the suite ran on."""
# ruff: noqa: F401  (the names imported here are what this module offers)

from __future__ import annotations

import ray

from trainables.foundation.errors import UsageError

TESTED_RAY = "2.60.0"


class RayInternalsMoved(UsageError):
    """This Ray's internals are not where the tested Ray keeps them."""


try:
    # Train's controller actor, which `TrialTrainer` starts itself to keep a handle that aborts a stopped trial's run
    # (`fit()` offers no abort: Tune would kill the whole trial process).
    from ray._common.constants import RAY_WARN_BLOCKING_GET_INSIDE_ASYNC_ENV_VAR

    # The Tune session's stop event (no public API): without it a stopped DDP trial cannot abort its run.
    from ray.train._internal.session import get_session
    from ray.train._internal.utils import get_address_and_port

    # Train's callback that starts a Ray Data actor per run, left out by type (one process fewer per DDP trial).
    from ray.train.v2._internal.callbacks.datasets import DatasetsCallback

    # The environment `DataParallelTrainer` gives that controller; the same, so the controller behaves the same.
    from ray.train.v2._internal.constants import (
        DEFAULT_RAY_WARN_BLOCKING_GET_INSIDE_ASYNC_VALUE,
        get_env_vars_to_propagate,
    )
    from ray.train.v2._internal.execution.controller import TrainController

    # What `TorchConfig` uses (a framework name, rank 0's address and port), without its torch import (1.5-2 s).
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
    """The host:port Ray will dial for `address`, to refuse in one line a head that does not answer."""
    from ray._private.services import canonicalize_bootstrap_address

    return canonicalize_bootstrap_address(address)


def start_autoscaling_coordinator() -> None:
    """Ray Train's cluster-wide AutoscalingCoordinator actor, started ahead (trainables.trainer)."""
    from ray.data._internal.cluster_autoscaler.default_autoscaling_coordinator import (
        get_or_create_autoscaling_coordinator,
    )

    get_or_create_autoscaling_coordinator()


def wait_until_tune_took_every_report(poll_s: float = 0.05) -> None:
    """Return once the trial's actor took every report its Train run handed to Tune. Train hands them through a queue
    of one (`TuneReportCallback`); a training function that returns while its last report still waits there has Tune
    put its own last word (RESULT_DUPLICATE) in the actor's result queue of one, and the actor's main thread, moving the
    waiting report there, blocks forever: the trial hangs, its run long ended (Ray 2.60, whenever the driver is slower
    to ask for the next result than the run is to end: a busy driver, a loaded machine)."""
    import time

    session = get_session()
    waiting = getattr(session, "_inter_actor_queue", None) if session is not None else None
    while waiting is not None and not waiting.empty() and not session.stop_event.is_set():  # stopped: Tune takes none
        time.sleep(poll_s)


MLFLOW_INTEGRATION = "ray.air.integrations.mlflow"


def count_callbacks_without_importing_mlflow() -> None:
    """Tune tags a run's callbacks for Ray's usage statistics at each `Tuner.fit` given callbacks, counting them by
    class name against the logger integrations it knows, which it imports to name them: MLflow's imports MLflow, 1.7 s
    (2-5 s on 2 busy cores) on the driver while the trials start, though a search without MLflow never uses it. The
    same count, with MLflow's callback named without its import: no callback is one unless its module is imported."""
    import collections
    import sys

    from ray.air._internal import usage

    if getattr(usage._count_callbacks, "without_mlflow", False):
        return
    count_importing = usage._count_callbacks

    def count(callbacks):
        if MLFLOW_INTEGRATION in sys.modules:
            return count_importing(callbacks)
        from ray.air.integrations.comet import CometLoggerCallback
        from ray.air.integrations.wandb import WandbLoggerCallback
        from ray.tune import Callback
        from ray.tune.logger import LoggerCallback
        from ray.tune.logger.aim import AimLoggerCallback
        from ray.tune.utils.callback import DEFAULT_CALLBACK_CLASSES

        known = (WandbLoggerCallback, CometLoggerCallback, AimLoggerCallback, *DEFAULT_CALLBACK_CLASSES)
        names, counts = {cls.__name__ for cls in known} | {"MLflowLoggerCallback"}, collections.defaultdict(int)
        for callback in [c for c in callbacks or [] if isinstance(c, Callback)]:
            name = type(callback).__name__
            if name in names:
                counts[name] += 1
            else:
                counts["CustomLoggerCallback" if isinstance(callback, LoggerCallback) else "CustomCallback"] += 1
        return counts

    count.without_mlflow, count.importing = True, count_importing
    usage._count_callbacks = count
