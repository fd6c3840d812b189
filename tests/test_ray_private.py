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


def test_tunes_usage_tag_counts_callbacks_as_ray_does_without_importing_mlflow():
    # Tune's tag of a run's callbacks (its JSON of counts by class name), first with no integration imported (one
    # user class named as MLflow's counts by its name, as Ray counts it), then against Ray's own count once MLflow's
    # integration is imported; in a fresh interpreter, which imported neither
    code = """if True:
        import json, sys
        from ray._common.usage import usage_lib
        from ray.air._internal import usage
        from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback, LoggerCallback
        from search.running.ends.callbacks import Guarded
        from trainables.ray_private import INTEGRATIONS, spare_imports_in_tunes_usage_tag

        class Own(Guarded):
            def __init__(self):
                pass

        class OwnLogger(LoggerCallback):
            pass

        class MLflowLoggerCallback(Guarded):  # a user's, named as Ray's
            def __init__(self):
                pass

        def tagged(callbacks):
            usage.tag_callbacks(callbacks)
            return json.loads(usage_lib._recorded_extra_usage_tags["air_callbacks"])

        callbacks = [Own(), Own(), OwnLogger(), CSVLoggerCallback(), JsonLoggerCallback(), MLflowLoggerCallback(), 1]
        spare_imports_in_tunes_usage_tag()
        spare_imports_in_tunes_usage_tag()  # once replaced, left so
        before = tagged(callbacks), [module for module in [*INTEGRATIONS, "mlflow"] if module in sys.modules]
        from ray.air.integrations.mlflow import MLflowLoggerCallback as Rays

        callbacks.append(Rays.__new__(Rays))
        after = tagged(callbacks), dict(usage._count_callbacks.importing(callbacks))
        print(json.dumps([before, after]))
    """
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    (counted, imported), (ours, rays) = json.loads(result.stdout)
    named = {"CSVLoggerCallback": 1, "JsonLoggerCallback": 1, "MLflowLoggerCallback": 1}
    assert counted == {"CustomCallback": 2, "CustomLoggerCallback": 1, **named} and imported == []
    assert ours == rays == {**counted, "MLflowLoggerCallback": 2}


def test_an_ended_trial_keeps_its_last_result_and_none_of_tunes_statistics_of_its_metrics():
    # a real Tune trial reported 3 results of 30 numbers, as a trial of this project reports each epoch
    from ray.tune.experiment import Trial

    trial = Trial("__fake", config={"lr": 0.1}, stub=True)
    for step in (1, 2, 3):
        trial.update_last_result({**{f"m{i}": i * step for i in range(30)}, "epoch": step, "training_iteration": step})
    before = len(trial.run_metadata.get_json_state())
    assert {"m29", "epoch"} <= set(trial.metric_analysis) and len(trial.metric_n_steps["m29"]["10"]) == 3
    ray_private.forget_ended_trials_statistics(trial)
    assert trial.metric_analysis == {} and trial.metric_n_steps == {}
    assert trial.last_result["epoch"] == 3 and trial.last_result["m29"] == 87  # what the decider and Tune read
    assert len(trial.run_metadata.get_json_state()) < before / 3  # Tune's snapshot of the trial shrinks with it
    trial.update_last_result({"m0": 1.0, "training_iteration": 4})  # a later result is counted afresh
    assert trial.metric_analysis["m0"]["last"] == 1.0


def test_tunes_result_grid_is_built_without_every_trials_frame_inside_the_door_and_with_it_outside(tmp_path):
    # a real Tune trial with its result.json where Tune's ExperimentAnalysis reads it at the end of `Tuner.fit`
    from pathlib import Path

    from ray.train._internal.storage import StorageContext
    from ray.tune import ResultGrid
    from ray.tune.analysis import ExperimentAnalysis
    from ray.tune.experiment import Trial

    storage = StorageContext(storage_path=str(tmp_path), experiment_dir_name="exp", trial_dir_name="trial_a")
    trial = Trial("__fake", config={"lr": 0.1}, stub=True, storage=storage)
    trial.update_last_result({"val_acc": 0.5, "training_iteration": 1})
    Path(trial.storage.trial_fs_path).mkdir(parents=True)
    (Path(trial.storage.trial_fs_path) / "result.json").write_text('{"val_acc": 0.5, "training_iteration": 1}\n')
    state = str(tmp_path / "exp" / "experiment_state.json")
    with ray_private.tunes_result_frames_unread():
        grid = ResultGrid(ExperimentAnalysis(state, trials=[trial]))
    assert grid[0].metrics["val_acc"] == 0.5 and grid[0].metrics_dataframe is None  # the trial, not its frame
    again = ResultGrid(ExperimentAnalysis(state, trials=[trial]))
    assert list(again[0].metrics_dataframe["val_acc"]) == [0.5]  # outside the door Tune reads the file as before
