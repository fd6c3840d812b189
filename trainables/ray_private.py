"""Every use of Ray's private modules, behind one door, checked on import against the Ray the suite ran on."""
# ruff: noqa: F401  (the names imported here are what this module offers)

from __future__ import annotations

import contextlib

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

    # Tune's count of a run's callbacks for Ray's usage tag, which imports every logger integration to name them.
    from ray.air._internal import usage as tune_usage

    tune_usage.tag_callbacks, tune_usage._count_callbacks  # noqa: B018  (what spare_imports_in_tunes_usage_tag replaces)
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


# Ray's logger integrations by module and class name; MLflow's and W&B's import their libraries when imported.
INTEGRATIONS = {
    "ray.air.integrations.mlflow": "MLflowLoggerCallback",
    "ray.air.integrations.wandb": "WandbLoggerCallback",
    "ray.air.integrations.comet": "CometLoggerCallback",
    "ray.tune.logger.aim": "AimLoggerCallback",
}


def spare_imports_in_tunes_usage_tag() -> None:
    """Replace, for this process, Tune's count of a run's callbacks for Ray's usage tag (at each `Tuner.fit` given
    callbacks) with the same count that names Ray's logger integrations without importing them: Tune imports them to
    name them, and MLflow's imports MLflow, 1.7 s of the driver's start (more on busy cores), though a search without
    MLflow never uses it. A callback cannot be an integration's unless its module is imported; once one is, Tune's own
    count runs. Idempotent."""
    import collections
    import sys

    if getattr(tune_usage._count_callbacks, "spares_imports", False):
        return
    count_importing = tune_usage._count_callbacks

    def count(callbacks):
        try:  # here, not at the door: the door is imported where Tune is not (a DDP rank), and Ray's count is the same
            from ray.tune.utils.callback import DEFAULT_CALLBACK_CLASSES
        except ImportError:
            return count_importing(callbacks)
        if any(module in sys.modules for module in INTEGRATIONS):
            return count_importing(callbacks)
        from ray.tune import Callback
        from ray.tune.logger import LoggerCallback

        names = {cls.__name__ for cls in DEFAULT_CALLBACK_CLASSES} | set(INTEGRATIONS.values())
        counts = collections.defaultdict(int)
        for callback in [c for c in callbacks or [] if isinstance(c, Callback)]:
            name = type(callback).__name__
            if name in names:
                counts[name] += 1
            else:
                counts["CustomLoggerCallback" if isinstance(callback, LoggerCallback) else "CustomCallback"] += 1
        return counts

    count.spares_imports, count.importing = True, count_importing
    tune_usage._count_callbacks = count


def forget_ended_trials_statistics(trial) -> None:
    """Drop what Tune's trial keeps of each numeric metric it was reported (max, min, mean, last, the last 5 and 10
    values' means and their windows): with this project's ~34 numbers a report, ~75 KB a trial, held by the driver
    for the whole search (150 MiB at 2,000 trials). Tune reads them only to rank trials in `ExperimentAnalysis`,
    which this project never asks, and the live view only of running trials; the trial's last result stays. Unlike
    the door's other names, a Ray that moved them is not refused: the trials keep them and the driver uses more
    memory, nothing else (tests/test_ray_private.py holds the tested Ray's place)."""
    metadata = getattr(trial, "run_metadata", None)
    if hasattr(metadata, "metric_n_steps") and hasattr(metadata, "metric_analysis"):
        metadata.metric_analysis, metadata.metric_n_steps = {}, {}


@contextlib.contextmanager
def tunes_result_frames_unread():
    """While it runs, `Tuner.fit` returns its ResultGrid without reading every trial's result.json into a pandas frame
    (`ExperimentAnalysis._fetch_trial_dataframes`: about 3 s at the end of a 2,000-trial search, 15 s at 10,000, all
    of them held in memory): this project never reads that grid (the study and the trials' files are its record). A
    Ray that moved the method keeps reading them: a slower end, nothing else (tests/test_ray_private.py)."""
    from ray.tune.analysis.experiment_analysis import ExperimentAnalysis

    reading = ExperimentAnalysis.__dict__.get("_fetch_trial_dataframes")
    if reading is None:
        yield
        return
    ExperimentAnalysis._fetch_trial_dataframes = lambda self: {}
    try:
        yield
    finally:
        ExperimentAnalysis._fetch_trial_dataframes = reading
