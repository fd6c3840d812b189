"""What a multi-worker trial's own process and Ray Train's controller import: Ray Train, not torch."""

import subprocess
import sys

import pytest


def test_the_trial_driver_and_the_backend_config_import_without_torch():
    """Train's controller unpickles `DDPConfig`, and a DDP trial's process imports the driver and the trainer: torch
    in either would be 1.5-2 s of every DDP trial's start on 2 cores (TorchConfig's module imports it)."""
    code = (
        "import pickle, sys\n"
        "import trainables.driver, trainables.trainer\n"
        "from trainables.ddp_backend import DDPConfig\n"
        "config = pickle.loads(pickle.dumps(DDPConfig('gloo')))\n"
        "assert config.backend == 'gloo' and config.backend_cls.__name__ == 'DDPBackend'\n"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.e2e
def test_the_coordinator_started_ahead_is_the_one_ray_train_asks():
    """`start_train_coordinator` must start the very actor a Train run's controller registers with (else it is a
    process for nothing): in a fresh interpreter with its own local Ray instance, stopped at the end."""
    code = (
        "import ray\n"
        "from ray.train.v2._internal.execution.scaling_policy.autoscaling_coordinator_client import (\n"
        "    TrainAutoscalingCoordinatorClient)\n"
        "from trainables.trainer import start_train_coordinator\n"
        "ray.init(address='local', num_cpus=1, include_dashboard=False, logging_level='ERROR')\n"
        "try:\n"
        "    start_train_coordinator()\n"
        "    ahead = ray.get_actor('AutoscalingCoordinator', namespace='AutoscalingCoordinator')\n"
        "    asked = TrainAutoscalingCoordinatorClient('train-x')._autoscaling_coordinator\n"
        "    assert asked._actor_id == ahead._actor_id, (asked, ahead)\n"
        "finally:\n"
        "    ray.shutdown()"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
