"""What `run` keeps when it fails (no Ray instance: the driver's session is replaced by one that fails as Ray or
storage can)."""

import json

import pytest

from search.running import tuner
from trainables.foundation.config import RunConfig
from trainables.foundation.errors import RayDidNotStart, UsageError
from trainables.foundation.space import load_space
from trainables.foundation.storage import experiment_of


def test_an_error_worded_as_bad_input_after_trials_ran_keeps_the_experiment(tmp_path, monkeypatch):
    """storage.filesystem words any failure to open a URI as bad input (UsageError): a transient S3 error after
    trials ran must not delete the experiment. Only a refusal before any trial ran removes the folder `run` claimed."""
    config = RunConfig(space="mlp_mnist", storage=str(tmp_path), name="e")
    experiment = experiment_of(config.storage, config.name)
    experiment.local.mkdir()

    def trials_ran_then_storage_failed(*args, **kwargs):
        (experiment.local / "trial_aaaa0001").mkdir()
        (experiment.local / "trial_aaaa0001" / "result.json").write_text(
            json.dumps({"epoch": 1, "val_acc": 0.5}) + "\n"
        )
        raise UsageError("storage=s3://bucket/runs: pyarrow cannot open it (AWS Error NETWORK_CONNECTION)")

    monkeypatch.setattr(tuner, "drive", trials_ran_then_storage_failed)
    with pytest.raises(UsageError):
        tuner.run_search(config, load_space("mlp_mnist"), experiment)
    assert (experiment.local / "trial_aaaa0001" / "result.json").is_file()


def test_a_refusal_before_any_trial_ran_leaves_no_experiment(tmp_path, monkeypatch):
    config = RunConfig(space="mlp_mnist", storage=str(tmp_path), name="e")
    experiment = experiment_of(config.storage, config.name)
    experiment.local.mkdir()

    def refused(*args, **kwargs):
        raise UsageError("workers=16 x (1 CPU): one trial needs 16 CPUs but the cluster has 2")

    monkeypatch.setattr(tuner, "drive", refused)
    with pytest.raises(UsageError):
        tuner.run_search(config, load_space("mlp_mnist"), experiment)
    assert not experiment.local.exists()


def test_a_ray_that_does_not_start_is_one_line_and_leaves_no_experiment(tmp_path, monkeypatch):
    """Ray's start fails for real (its temporary folder cannot be made: a file stands where it goes; on a busy
    machine a start that times out fails inside ray.init alike): one line naming the cause and what to try, exit
    code 75 (a temporary failure), no experiment left and no Ray left connected."""
    import ray

    blocked = tmp_path / "not_a_folder"
    blocked.write_text("")
    monkeypatch.setenv("RAY_TMPDIR", str(blocked))
    config = RunConfig(space="mlp_mnist", storage=str(tmp_path / "runs"), name="e", trials=1, epochs=1, grace=1)
    experiment = experiment_of(config.storage, config.name)
    experiment.local.mkdir(parents=True)  # claimed, as `run` claims it before Ray
    with pytest.raises(RayDidNotStart) as refused:
        tuner.run_search(config, load_space("mlp_mnist"), experiment)
    words = str(refused.value)
    assert refused.value.exit_code == 75 and "\n" not in words
    assert words.startswith("Ray: the local Ray instance did not start (NotADirectoryError: ") and words.endswith(
        "nothing ran: try again once the machine is less busy (fewer processes beside it), or join a running "
        "cluster with address=HOST:PORT"
    ), words
    assert not experiment.local.exists() and not ray.is_initialized()


def test_a_ray_kept_for_a_local_search_does_not_answer_for_another_address(monkeypatch):
    """search.api keeps its local Ray for the next search; a next search of a cluster's address is still checked
    before anything is written (a closed port on 127.0.0.1 here), not taken as answered by the kept instance."""
    import ray

    from search.running.joining.kept_ray import KeptRay
    from search.running.preflight import refuse_no_cluster

    monkeypatch.setattr(ray, "is_initialized", lambda: True)  # the kept local instance, without starting one
    monkeypatch.setattr(KeptRay, "address", "")
    with pytest.raises(UsageError, match="127.0.0.1:9"):
        refuse_no_cluster("127.0.0.1:9")
    monkeypatch.setattr(KeptRay, "address", None)  # the caller's own ray.init: its connection is the caller's choice
    refuse_no_cluster("127.0.0.1:9")
