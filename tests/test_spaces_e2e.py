"""Every registered space with a data path of its own through the whole chain on real data: search, best checkpoint,
export, TensorBoard.

Parametrized over the registry, so a new space on new data is tested by being added (its dataset needs an entry in
`data_args`). The spaces on MNIST-format IDX files take the shared search's path, which tests/test_e2e.py runs end to
end with resnet_mnist; their models train and export in tests/test_spaces.py, FashionMNIST's layout is read there."""

import json
import os

import pytest

from search import samples
from tests.conftest import MNIST_MINI
from tests.e2e_helpers import run_cli
from trainables.foundation.space import builtin_space_names, load_space

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def random_resnet50_weights(tmp_path_factory):
    """A local state_dict file standing in for downloaded ImageNet weights (no network here)."""
    import torch
    import torchvision

    path = tmp_path_factory.mktemp("weights") / "resnet50.pt"
    torch.save(torchvision.models.resnet50().state_dict(), path)
    return path


# datasets read by the shared search's path (the same IDX reader and in-memory feed)
IDX_DATASETS = {"mnist", "fashion_mnist"}
SPACES_OF_THEIR_OWN = [name for name in builtin_space_names() if load_space(name).dataset not in IDX_DATASETS]


def data_args(dataset: str, weights) -> list[str]:
    if dataset == "imagefolder":  # digit PNGs drawn from the package's MNIST sample
        return [f"data.root={samples.digit_folders_root(split_by_pct=False)}", "image_size=64"]
    if dataset == "imagefolder_split":
        return [
            f"data.root={samples.digit_folders_root(split_by_pct=True)}",
            "image_size=64",
            f"model.weights={weights}",
        ]
    raise AssertionError(f"no test data for dataset {dataset}")


# Spaces train as one-worker trials here; the one with a frozen backbone (parameters without gradients, which a DDP
# group must be told of) as a 2-worker DDP trial. DDP on every shape of trial: test_kill_anywhere, test_lifecycle.
DDP_SPACES = {"resnet50_transfer"}


@pytest.mark.parametrize("name", SPACES_OF_THEIR_OWN)
def test_space_runs_exports_and_logs(name, tmp_path, random_resnet50_weights):
    space = load_space(name)
    args = data_args(space.dataset, random_resnet50_weights)
    workers = 2 if name in DDP_SPACES else 1
    result = run_cli(
        "run",
        f"space={name}",
        *args,
        f"storage={tmp_path}",
        "name=s",
        "trials=1",
        "epochs=1",
        f"workers={workers}",
        "data.limit=256",
        "data.val_limit=200",
        "data.workers=1",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    experiment = tmp_path / "s"
    summary = json.loads((experiment / "summary.json").read_text())
    best = summary["best"]
    assert best and os.path.isdir(best["checkpoint"]) and summary["space"] == name
    assert list((experiment / f"trial_{best['trial_id']}").glob("events.out.tfevents.*"))

    exported = run_cli("export", str(experiment))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "verified: val_acc=" in exported.stdout
    meta = json.loads((experiment / "export" / "model.json").read_text())
    assert meta["architecture"] == space.architecture and meta["space"] == name


USER_SPACE = '''
"""A user's own space: a tiny conv net of the user's, on MNIST."""
from optuna.distributions import FloatDistribution
from torch import nn  # a user's space may import torch; the built-in ones do not

from trainables.foundation.space import Space


def tiny_net(in_channels, num_classes, width):
    return nn.Sequential(nn.Conv2d(in_channels, width, 3, 2), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(width, num_classes))


SPACE = Space(
    name="tiny",
    description="a user's tiny conv net",
    architecture=__file__ + ":tiny_net",
    model_args=lambda hp, data: {"in_channels": data.in_channels, "num_classes": data.num_classes, "width": 8},
    dataset="mnist",
    hyperparameters={"lr": FloatDistribution(0.01, 0.5, log=True)},
    constants={"optimizer": "sgd", "batch_size": 64, "momentum": 0.9},
)
'''


def test_user_defined_space_from_a_file_compiled_in_bf16_channels_last(tmp_path):
    """A user's space from a file, trained by 2 DDP workers with torch.compile (inductor, on CPU here), bf16
    autocast and channels_last; the export, evaluated in plain fp32, reproduces the reported accuracy."""
    space_file = tmp_path / "my_space.py"
    space_file.write_text(USER_SPACE)
    result = run_cli(
        "run",
        f"space={space_file}",
        f"data.root={MNIST_MINI}",
        f"storage={tmp_path}",
        "name=u",
        "trials=1",
        "epochs=2",
        "workers=2",
        "data.limit=256",
        "data.val_limit=200",
        "compile=true",
        "precision=bf16",
        "channels_last=true",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads((tmp_path / "u" / "summary.json").read_text())
    assert summary["space"] == "tiny" and len(summary["trials"]) == 1
    assert {t["status"] for t in summary["trials"]} <= {"completed", "stopped_early"}
    exported = run_cli("export", str(tmp_path / "u"))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "verified: val_acc=" in exported.stdout
