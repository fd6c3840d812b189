"""A search through the whole chain on real data, once per way a trial reads its data: search, best checkpoint,
export, TensorBoard.

The MNIST-format IDX datasets are read into memory: that is the shared search's path, which tests/test_e2e.py runs
end to end with resnet_mnist. The ImageFolder datasets are decoded by DataLoader workers: resnet50_transfer runs here
(a split-by-percent tree, a local weights file, a frozen backbone in a 2-worker DDP trial). Every space's model trains
and exports in tests/test_spaces.py; every folder space's layout feeds its trial in tests/test_imagefolder.py;
FashionMNIST's layout is read in tests/test_spaces.py. A space on a new kind of data fails
test_every_space_reads_data_a_search_here_covers until it gets a search here."""

import json
import os

import pytest

from search import samples
from tests.conftest import MNIST_MINI
from tests.e2e_helpers import run_cli
from trainables.foundation.space import builtin_space_names, load_space

pytestmark = pytest.mark.e2e


IDX_DATASETS = {"mnist", "fashion_mnist"}  # the shared search's path (test_e2e.py)
FOLDER_DATASETS = {"imagefolder", "imagefolder_split"}  # resnet50_transfer's path, below


def test_every_space_reads_data_a_search_here_covers():
    kinds = {name: load_space(name).dataset for name in builtin_space_names()}
    assert all(kind in IDX_DATASETS | FOLDER_DATASETS for kind in kinds.values()), kinds


@pytest.fixture
def random_resnet50_weights(tmp_path):
    """A local state_dict file standing in for downloaded ImageNet weights (no network here)."""
    import torch
    import torchvision

    path = tmp_path / "resnet50.pt"
    torch.save(torchvision.models.resnet50().state_dict(), path)
    return path


def test_transfer_learning_on_image_folders_in_a_ddp_trial_runs_exports_and_logs(tmp_path, random_resnet50_weights):
    result = run_cli(
        "run",
        "space=resnet50_transfer",
        f"data.root={samples.digit_folders_root(split_by_pct=True)}",
        "image_size=32",
        f"model.weights={random_resnet50_weights}",
        f"storage={tmp_path}",
        "name=s",
        "trials=1",
        "epochs=1",
        "freeze_backbone=true",
        "workers=2",  # a frozen backbone: parameters without gradients, which a DDP group must be told of
        "data.limit=256",
        "data.val_limit=200",
        "data.workers=1",
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    experiment = tmp_path / "s"
    summary = json.loads((experiment / "summary.json").read_text())
    best = summary["best"]
    assert best and os.path.isdir(experiment / best["checkpoint"]) and summary["space"] == "resnet50_transfer"
    assert list((experiment / f"trial_{best['trial_id']}").glob("events.out.tfevents.*"))

    exported = run_cli("export", str(experiment))
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert "verified: val_acc=" in exported.stdout
    meta = json.loads((experiment / "export" / "model.json").read_text())
    assert meta["architecture"] == load_space("resnet50_transfer").architecture and meta["space"] == "resnet50_transfer"


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
