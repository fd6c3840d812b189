"""The Tune trainable: one driver per trial that builds and fits a distributed TorchTrainer."""

from __future__ import annotations

import os
import time

import ray
import ray.tune
from ray.util.placement_group import placement_group, remove_placement_group

from search.config import RunConfig
from search.resources import TrialShape, plan_concurrency

# torch, Ray Train and the worker loop are imported by `fit_trial`, not here: a driver started ahead (prefetch) loads
# them only once its turn comes, while the trial before it trains, instead of competing with that trial's launch.

# What the trial driver itself asks of the cluster: no CPU (the training workers hold those), only a
# token of memory, because Tune refuses a trial that asks for nothing at all.
DRIVER_RESOURCES = {"cpu": 0, "memory": 64 * 2**20}
HEALTH_CHECK_INTERVAL = "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S"
PREEMPTION_WATCHER = "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER"


class NonFiniteLoss(RuntimeError):
    """The training loss became NaN or infinite: the trial cannot recover."""


def train_run_name(trial_id: str) -> str:
    """Stable folder of a trial's Ray Train run (and its checkpoints) inside the experiment."""
    return f"train_{trial_id}"


def alive_nodes() -> list[dict]:
    """Every node of the cluster that is alive now, as `ray.nodes()` describes it."""
    return [node for node in ray.nodes() if node.get("Alive")]


def alive_node_resources() -> list[dict]:
    """Total resources of every node of the cluster that is alive now."""
    return [node["Resources"] for node in alive_nodes()]


def worker_resources(run: RunConfig) -> dict:
    resources = {"CPU": run.cpus}
    if run.gpus:
        resources["GPU"] = run.gpus
    return resources


@ray.remote(num_cpus=0)
class StartLine:
    """One trial at a time goes from waiting for room to a started worker group. A trial started ahead (prefetch)
    waits for room itself, so the previous one's freed resources go to exactly one new worker group."""

    # A holder that has not released after this long is gone (its driver died): Train gives a worker group
    # 60 s to start, and the holder releases as soon as its workers run.
    LEASE_S = 300.0

    def __init__(self):
        self.holder, self.since = None, 0.0
        self.workers = {}  # trial id -> its rank-0 worker, the proof that the trial's group holds resources

    def started(self, trial_id: str, worker) -> None:
        """The trial's worker group is up (and holds its resources): the next trial may start waiting for room."""
        self.workers[trial_id] = worker
        self.release(trial_id)

    def worker_groups(self) -> dict:
        return dict(self.workers)

    def forget(self, trial_ids: list[str]) -> None:
        for trial_id in trial_ids:
            self.workers.pop(trial_id, None)

    def try_acquire(self, trial_id: str) -> bool:
        if self.holder in (None, trial_id) or time.monotonic() - self.since > self.LEASE_S:
            self.holder, self.since = trial_id, time.monotonic()
            return True
        return False

    def release(self, trial_id: str) -> None:
        if self.holder == trial_id:
            self.holder = None


def start_line_name(experiment_name: str) -> str:
    return f"search-start-line-{experiment_name}"


class NoRoom(RuntimeError):
    """Resources this search does not hold keep a trial from starting."""


def wait_for_room(line, trial_id: str, settings: RunConfig, poll_s: float = 0.5, idle_limit_s: float = 60.0) -> None:
    """Wait here, not in Ray Train (whose worker-group start gives up after 60 s), until this trial's turn comes
    and the cluster holds its workers. The alive nodes are checked on every poll, so a lost node fails the trial
    instead of leaving it waiting; and while no trial of this search is training, the room has `idle_limit_s` to
    come (as long as Ray Train would give it) before the trial fails, naming what is free."""
    shape = TrialShape.of(settings)
    while not ray.get(line.try_acquire.remote(trial_id)):
        plan_concurrency(alive_node_resources(), shape, 1)
        time.sleep(poll_s)
    import_training_stack()
    room = placement_group([worker_resources(settings)] * settings.workers, strategy="PACK")
    idle_since = None
    try:
        while not ray.wait([room.ready()], timeout=poll_s)[0]:
            plan_concurrency(alive_node_resources(), shape, 1)
            line.try_acquire.remote(trial_id)  # renews this driver's lease while it waits
            if training_groups_alive(line):
                idle_since = None
            elif idle_since is None:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > idle_limit_s:
                raise NoRoom(no_room_message(settings, idle_limit_s))
    finally:
        remove_placement_group(room)  # handed over to the Train run this driver starts next


def training_groups_alive(line) -> bool:
    """Whether a worker group of this search still runs (it will free resources); forgets the finished ones."""
    alive, gone = False, []
    for trial_id, worker in ray.get(line.worker_groups.remote()).items():
        try:
            ray.get(worker.__ray_ready__.remote(), timeout=5)
            alive = True
        except ray.exceptions.GetTimeoutError:
            alive = True  # busy, not gone
        except ray.exceptions.RayActorError:
            gone.append(trial_id)
    if gone:
        line.forget.remote(gone)
    return alive


def no_room_message(settings: RunConfig, idle_limit_s: float) -> str:
    free = {key: value for key, value in ray.available_resources().items() if key in ("CPU", "GPU")}
    return (f"no room for {settings.workers} worker(s) x {worker_resources(settings)} for {idle_limit_s:.0f} s while "
            f"no trial of this search was training (free now: {free}): something outside this search holds the "
            "resources (another job, or placement groups a crashed run left behind)")


def import_training_stack() -> None:
    """Load torch, Ray Train and the worker loop into this driver (the slow part of its start, ~2 s of CPU)."""
    import trainables.trainer  # noqa: F401
    import trainables.worker  # noqa: F401


def train_trial(hp: dict, run: dict, experiment_dir: str, metric: str, mode: str, start_line: str = "") -> None:
    settings = RunConfig.from_dict(run)
    trial_id = ray.tune.get_context().get_trial_id()
    line = ray.get_actor(start_line) if start_line else None
    try:
        if line:
            wait_for_room(line, trial_id, settings)
        fit_trial(hp, run, settings, trial_id, experiment_dir, metric, mode, start_line)
    finally:
        if line:
            line.release.remote(trial_id)  # the workers release it once up; this covers a run that never started


def fit_trial(hp: dict, run: dict, settings: RunConfig, trial_id: str, experiment_dir: str, metric: str, mode: str,
              start_line: str) -> None:  # fmt: skip
    import ray.train
    from ray.tune.integration.ray_train import TuneReportCallback

    from trainables.trainer import TrialTrainer
    from trainables.worker import train_fn_per_worker

    started_at = time.time()
    # Train's controller checks its workers every 2 s by default; a finished run's resources (which the next trial
    # waits for) are freed only at that check. Ray Train hands this variable on to the controller.
    os.environ.setdefault(HEALTH_CHECK_INTERVAL, "0.5")
    # Train starts a preemption watcher (one more process) per run to tell workers their node is being drained; on a
    # lone node there is nowhere for the run to move to, and the worker loop does not read that signal anyway.
    if len(alive_nodes()) == 1:
        os.environ.setdefault(PREEMPTION_WATCHER, "0")
    # Nodes may have left since the search started; Ray Train would wait for them forever.
    plan_concurrency(alive_node_resources(), TrialShape.of(settings), 1)
    trainer = TrialTrainer(
        train_fn_per_worker,
        train_loop_config={"hp": hp, "run": run, "driver_started_at": started_at, "start_line": start_line,
                           "trial_id": trial_id},  # fmt: skip
        scaling_config=ray.train.ScalingConfig(
            num_workers=settings.workers,
            use_gpu=bool(settings.gpus),
            resources_per_worker=worker_resources(settings),
        ),
        run_config=ray.train.RunConfig(
            name=train_run_name(trial_id),
            storage_path=experiment_dir,
            checkpoint_config=ray.train.CheckpointConfig(
                num_to_keep=settings.checkpoints,
                checkpoint_score_attribute=metric,
                checkpoint_score_order=mode,
            ),
            # The worker group's start (waiting for resources) is retried as often as a worker failure, not forever.
            failure_config=ray.train.FailureConfig(
                max_failures=settings.max_failures, controller_failure_limit=settings.max_failures
            ),
            callbacks=[TuneReportCallback()],
        ),
    )
    result = trainer.fit()
    last = result.metrics or {}
    if last.get("diverged"):
        raise NonFiniteLoss(
            f"loss became non-finite at epoch {last.get('epoch')} "
            f"(train_loss={last.get('train_loss')}, val_loss={last.get('val_loss')})"
        )
