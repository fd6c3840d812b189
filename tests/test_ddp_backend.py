"""What a multi-worker trial's own process and Ray Train's controller import: Ray Train, not torch."""

import subprocess
import sys


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
