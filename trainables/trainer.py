"""The trainer each trial driver fits: Ray Train's TorchTrainer, less what this project does not use."""

from __future__ import annotations

import logging
import threading

import ray
from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

from trainables import ray_private
from trainables.ddp_backend import DDPConfig


class TrialTrainer(DataParallelTrainer):
    """`ray.train.torch.TorchTrainer`, less what this project does not use, and with `fit_until`."""

    def __init__(self, train_loop_per_worker, *, train_loop_config, scaling_config, run_config):
        super().__init__(
            train_loop_per_worker,
            train_loop_config=train_loop_config,
            scaling_config=scaling_config,
            run_config=run_config,
            backend_config=DDPConfig("nccl" if scaling_config.use_gpu else "gloo"),
        )
        self._controller = None

    def _get_local_controller(self):
        return ray_private.local_torch_controller()(experiment_name=self.run_config.name, datasets=self.datasets)

    def _create_default_callbacks(self):
        return [c for c in super()._create_default_callbacks() if not isinstance(c, ray_private.DatasetsCallback)]

    def fit_until(self, stop: threading.Event):
        """`fit()`, aborted as soon as `stop` is set (None then), so Tune need not kill the process."""
        if self.running_in_local_mode:  # the training function runs in this thread: its next report ends it
            return self.fit()
        fitted = threading.Event()
        threading.Thread(target=self._abort_when, args=(stop, fitted), daemon=True, name="abort-on-stop").start()
        try:
            return self.fit()
        except Exception:
            if stop.is_set():
                return None
            raise
        finally:
            fitted.set()

    def _abort_when(self, stop: threading.Event, fitted: threading.Event) -> None:
        while not fitted.wait(0.1):
            if stop.is_set() and self._controller is not None:
                self._controller.abort.remote()  # stops the workers, then the controller exits
                return

    def _initialize_and_run_controller(self, **controller_init_kwargs):
        """Ray's own, less the SIGINT handler, with the controller kept where `fit_until` can abort it."""
        env_vars = ray_private.get_env_vars_to_propagate()
        blocking_get = ray_private.RAY_WARN_BLOCKING_GET_INSIDE_ASYNC_ENV_VAR
        env_vars.setdefault(blocking_get, ray_private.DEFAULT_RAY_WARN_BLOCKING_GET_INSIDE_ASYNC_VALUE)
        node = {ray_private.NODE_ID_LABEL: ray.get_runtime_context().get_node_id()}
        remote = ray.remote(num_cpus=0, runtime_env={"env_vars": env_vars}, label_selector=node)
        controller_cls = remote(ray_private.TrainController)
        self._controller = controller_cls.remote(**controller_init_kwargs)
        ray.get(self._controller.run.remote())
        return ray.get(self._controller.get_result.remote())


def start_train_coordinator() -> None:
    """Start Ray Train's AutoscalingCoordinator actor ahead (0.9 s of the first DDP trial's start)."""
    try:
        ray_private.start_autoscaling_coordinator()
    except Exception as exc:  # noqa: BLE001 - never worth failing a search over
        logging.getLogger("ray").info("Ray Train's AutoscalingCoordinator not started ahead: %r", exc)
