"""The CLI refuses bad input with one line and exit code 2, before Ray starts."""

import subprocess
import sys

import pytest

from tests.conftest import MNIST_MINI, REPO


def run_cli(*args, cwd=REPO, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "search", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["space=nope"], "space=nope: unknown space; known spaces: cnn_mnist, mlp_mnist, resnet50_transfer"),
        (["trials=2"], "space= is required"),
        (["space=resnet_mnist", "epochz=2"], "epochz: unknown key; did you mean epochs?"),
        (["space=resnet_mnist", "trials=many"], "trials=many: expected an integer"),
        (["space=cnn_mnist", "batch_size=100"], "batch_size=100: allowed values are 32, 64, 128"),
        (["space=resnet_mnist", "optimizer=rmsprop"], "optimizer=rmsprop: allowed values are sgd, adam, adamw"),
        (
            ["space=cnn_mnist", f"data.root={MNIST_MINI}", f"enqueue={REPO / 'pyproject.toml'}"],
            "pyproject.toml: not JSON",
        ),
        (["space=cnn_mnist", "tracking=wandb"], "tracking=wandb: allowed values are none, mlflow"),
        (["space=cnn_mnist", "objectives=val_acc,flops"], "objectives=val_acc,flops: unknown objective 'flops'"),
        (["space=cnn_mnist", "objectives=val_acc,params:max"], "params is minimised, not maximised"),
        (["space=cnn_mnist", "epoch_budget=-3"], "epoch_budget=-3: must be >= 0 trial-epochs"),
        (
            ["space=cnn_mnist", f"data.root={MNIST_MINI}", "tracking=mlflow", "tracking.uri=http://127.0.0.1:9"],
            "tracking.uri=http://127.0.0.1:9: MLflow cannot use it",
        ),
        (
            ["space=cnn_mnist", f"data.root={MNIST_MINI}", "tracking=mlflow", "tracking.uri=sqlite:////no/such/m.db"],
            "tracking.uri=sqlite:////no/such/m.db: cannot write a store there (/no/such is not a writable folder)",
        ),
        (
            ["space=resnet_mnist", "grace=5", "epochs=2"],
            "grace=5: must be between 1 and epochs=2, or 0 (past the lr warm-up)",
        ),
        (
            ["space=resnet_mnist", "workers=16", "gpus=0", f"data.root={MNIST_MINI}"],
            "workers=16 x (1 CPU): one trial needs 16 CPUs but the cluster has",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, fragment):
    result = run_cli("run", f"storage={tmp_path}", *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [f"error: {result.stderr.strip()[7:]}"]
    assert fragment in result.stderr
    assert not any(tmp_path.iterdir()), "nothing may be written for refused input"


def test_missing_dataset_names_files_and_remedy(tmp_path):
    result = run_cli(
        "run",
        "space=resnet_mnist",
        f"data.root={tmp_path / 'empty'}",
        "data.download=false",
        f"storage={tmp_path / 'runs'}",
    )
    assert result.returncode == 2
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1
    assert "MNIST/raw/train-images-idx3-ubyte" in line and "t10k-labels-idx1-ubyte" in line
    assert "data.download=true" in line


def test_unknown_command():
    result = run_cli("frobnicate")
    assert result.returncode == 2 and "frobnicate: unknown command" in result.stderr


def test_help_lists_every_key():
    result = run_cli("run", "--help")
    assert result.returncode == 0
    for key in ["space=", "trials=8", "storage=./runs", "data.root=", "data.limit=0", "address=", "gpus=auto"]:
        assert key in result.stdout


def test_spaces_lists_ranges():
    result = run_cli("spaces")
    assert result.returncode == 0
    assert "resnet_mnist" in result.stdout and "lr" in result.stdout and "log scale" in result.stdout


def test_resume_refuses_a_changed_epochs_and_fewer_trials_naming_the_key(tmp_path):
    experiment = tmp_path / "e"
    experiment.mkdir()
    (experiment / "search.json").write_text('{"run": {"space": "mlp_mnist", "trials": 8, "epochs": 3}}')
    result = run_cli("resume", str(experiment), "epochs=5")
    assert result.returncode == 2 and "epochs=5: a search's epochs cannot change on resume" in result.stderr
    result = run_cli("resume", str(experiment), "trials=4")
    assert result.returncode == 2 and "trials=4: the search already has 8 trials" in result.stderr
