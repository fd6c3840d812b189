"""Ray's private modules sit behind one door (trainables/ray_private.py): with the tested Ray they all import; with
a Ray that moved one, `run` stops before Ray starts with one line naming the Ray version. No Ray instance."""

import json
import subprocess
import sys

import ray

from tests.conftest import MNIST_MINI, REPO
from trainables import ray_private


def test_the_tested_ray_has_every_internal_where_the_door_expects_it():
    assert ray.__version__ == ray_private.TESTED_RAY
    assert callable(ray_private.get_session) and ray_private.NODE_ID_LABEL


def test_a_ray_that_moved_an_internal_stops_run_in_one_line_naming_its_version(tmp_path):
    # as if this Ray kept `get_address_and_port` elsewhere: once Ray itself is imported, the name is gone from the
    # module the door imports it from
    code = (
        "import sys, ray.tune, ray.train._internal.utils as moved; del moved.get_address_and_port; "
        "from search.__main__ import main; "
        f"sys.exit(main(['run', 'space=mlp_mnist', 'data.root={MNIST_MINI}', 'storage={tmp_path}', 'trials=1']))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith(f"error: Ray {ray.__version__} keeps its internals elsewhere"), line
    assert f"install ray[default,train,tune]=={ray_private.TESTED_RAY}" in line


def test_tunes_usage_count_of_callbacks_is_rays_own_without_importing_mlflow():
    # Ray's count by class name (custom callbacks, custom loggers, its own loggers), first without MLflow's module,
    # then against Ray's own count once that module is imported; in a fresh interpreter, which imported neither
    code = """if True:
        import json, sys
        from ray.air._internal import usage
        from ray.tune.logger import CSVLoggerCallback, LoggerCallback
        from search.running.ends.callbacks import Guarded
        from trainables.ray_private import MLFLOW_INTEGRATION, count_callbacks_without_importing_mlflow

        class Own(Guarded):
            def __init__(self):
                pass

        class OwnLogger(LoggerCallback):
            pass

        callbacks = [Own(), Own(), OwnLogger(), CSVLoggerCallback(), object()]
        count_callbacks_without_importing_mlflow()
        count_callbacks_without_importing_mlflow()  # once patched, left so
        before = dict(usage._count_callbacks(callbacks)), MLFLOW_INTEGRATION in sys.modules, "mlflow" in sys.modules
        from ray.air.integrations.mlflow import MLflowLoggerCallback

        callbacks.append(MLflowLoggerCallback.__new__(MLflowLoggerCallback))
        after = dict(usage._count_callbacks(callbacks)), dict(usage._count_callbacks.importing(callbacks))
        print(json.dumps([before, after]))
    """
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    (counted, integration_imported, mlflow_imported), (ours, rays) = json.loads(result.stdout)
    assert counted == {"CustomCallback": 2, "CustomLoggerCallback": 1, "CSVLoggerCallback": 1}
    assert not integration_imported and not mlflow_imported
    assert ours == rays == {**counted, "MLflowLoggerCallback": 1}
