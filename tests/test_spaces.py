"""Every registered space honours the contract: adding a space adds these tests."""

import subprocess
import sys

import optuna
import pytest

from search.running.study.coding import contains
from trainables.foundation.space import Space, builtin_space_names, load_space
from trainables.models import model_for

SPACES = builtin_space_names()


def test_registry_is_not_empty():
    assert "resnet_mnist" in SPACES


def test_spaces_import_without_ray_or_torch():
    code = (
        "import sys; from trainables.foundation.space import builtin_space_names, load_space\n"
        "[load_space(n) for n in builtin_space_names()]\n"
        "import trainables.foundation.config, search.commands\n"
        "bad = [m for m in ('ray', 'torch') if m in sys.modules]\n"
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", SPACES)
def test_contract(name):
    space = load_space(name)
    assert isinstance(space, Space) and space.name == name
    assert space.mode in ("max", "min") and space.metric
    assert space.hyperparameters, "a space searches something"
    assert all(isinstance(d, optuna.distributions.BaseDistribution) for d in space.hyperparameters.values())
    assert "lr" in space.hyperparameters and "batch_size" in {**space.hyperparameters, **space.constants}


@pytest.mark.parametrize("name", SPACES)
def test_search_space_samples_in_range(name):
    space = load_space(name)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0))
    for _ in range(5):
        trial = study.ask(space.hyperparameters)
        for key, dist in space.hyperparameters.items():
            assert contains(dist, trial.params[key])


def example_info(space, hp):
    """The data a space's model is built for: the dataset's own for IDX data, 3 classes for image folders."""
    from trainables.data import DataInfo, FolderDataset, get_dataset

    dataset = get_dataset(space.dataset)
    if isinstance(dataset, FolderDataset):
        return DataInfo(("a", "b", "c"), 3, int(hp["image_size"]), dataset.mean, dataset.std)
    return dataset.info("", hp)


def sampled_hyperparameters(space: Space) -> dict:
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0))
    return {**space.constants, **study.ask(space.hyperparameters).params}


@pytest.mark.parametrize("name", SPACES)
def test_model_output_shape(name):
    import torch

    space = load_space(name)
    hp = sampled_hyperparameters(space)
    info = example_info(space, hp)
    model = model_for(space, hp, info).eval()
    images = torch.zeros(2, info.in_channels, info.image_size, info.image_size)
    with torch.no_grad():
        assert model(images).shape == (2, info.num_classes)


def test_resnet_mnist_is_resnet18_with_one_channel_conv1():
    space = load_space("resnet_mnist")
    model = model_for(space, {}, example_info(space, {}))
    assert model.conv1.in_channels == 1 and model.fc.out_features == 10
    assert type(model).__name__ == "ResNet" and len(model.layer1) == 2


def test_frozen_backbone_trains_only_the_head():
    space = load_space("resnet50_transfer")
    hp = {**space.constants, "freeze_backbone": True}
    model = model_for(space, hp, example_info(space, hp))
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"fc.weight", "fc.bias"} and model.fc.out_features == 3


def test_user_space_breaking_the_contract_says_what_is_missing(tmp_path):
    from trainables.foundation.errors import UsageError

    no_space = tmp_path / "empty_space.py"
    no_space.write_text("X = 1\n")
    with pytest.raises(UsageError, match="defines no SPACE"):
        load_space(str(no_space))
    missing = tmp_path / "missing_space.py"
    missing.write_text("from spaces import Space\nSPACE = Space(name='m', description='d', architecture='cnn')\n")
    with pytest.raises(UsageError, match="missing 2 required positional arguments: 'dataset' and 'hyperparameters'"):
        load_space(str(missing))
    wrong = tmp_path / "wrong_space.py"
    wrong.write_text(
        "from spaces import Space\nSPACE = Space(name='w', description='d', architecture='cnn', "
        "dataset='mnist', hyperparameters={'lr': (0.1, 1.0)})\n"
    )
    with pytest.raises(UsageError, match="hyperparameter lr must be an optuna distribution"):
        load_space(str(wrong))


@pytest.mark.parametrize("import_line", ["from spaces import Space", "from search.space import Space"])
def test_a_space_file_of_ones_own_loads_with_either_import(tmp_path, import_line):
    mine = tmp_path / "my_space.py"
    mine.write_text(
        f"{import_line}\nfrom optuna.distributions import FloatDistribution\n"
        "SPACE = Space(name='mine', description='d', architecture='cnn', dataset='mnist', "
        "hyperparameters={'lr': FloatDistribution(0.01, 0.1, log=True)})\n"
    )
    space = load_space(str(mine))
    assert space.name == "mine" and isinstance(space, Space)


STEP_OPTIONS = {
    "fp32": {},
    "channels_last": {"channels_last": True},
    "bf16": {"precision": "bf16"},
    "bf16+channels_last": {"channels_last": True, "precision": "bf16"},
}


@pytest.mark.parametrize("option", STEP_OPTIONS)
@pytest.mark.parametrize("name", SPACES)
def test_every_model_trains_under_every_step_option(name, option):
    """precision=bf16 and channels_last=true work for every space's model (on CPU here; the same code runs on GPU),
    and evaluation in channels_last gives the plain layout's numbers."""
    import torch

    from trainables.training import StepOptions, evaluate, make_optimizer, prepare_layout, train_one_epoch

    options, cpu = StepOptions(**STEP_OPTIONS[option]), torch.device("cpu")
    space = load_space(name)
    hp = {**sampled_hyperparameters(space), "lr": 0.01}
    info = example_info(space, hp)
    size = min(info.image_size, 32)  # ResNets take any size; the MLP needs its own 28
    torch.manual_seed(0)
    model = prepare_layout(model_for(space, hp, info), options)
    before = [p.detach().clone() for p in model.parameters() if p.requires_grad]
    batch = [(torch.randn(4, info.in_channels, size, size), torch.randint(0, info.num_classes, (4,)))]
    stats = train_one_epoch(model, make_optimizer(hp, model), batch, cpu, options)
    assert stats["count"] == 4 and torch.isfinite(stats["loss_sum"])
    after = [p for p in model.parameters() if p.requires_grad]
    assert any(not torch.equal(b, a) for b, a in zip(before, after))
    assert torch.isclose(
        evaluate(model, batch, cpu, options)["loss_sum"], evaluate(model, batch, cpu)["loss_sum"], rtol=1e-4
    )


def test_unwrap_reaches_the_network_inside_compile():
    import torch

    from trainables.training import unwrap

    network = torch.nn.Linear(2, 2)
    assert unwrap(torch.compile(network)) is network and unwrap(network) is network


@pytest.mark.parametrize("name", SPACES)
def test_every_model_exports_and_restores_without_this_project(name, tmp_path):
    """What `export` writes for each space's model (the search around it is one path for every IDX-format space, run
    end to end by tests/test_e2e.py; the others by tests/test_spaces_e2e.py): the safetensors weights rebuilt by
    `load_model` and the torch.export program both give the trained classifier's logits."""
    import torch

    from search.results.export import NormalizedClassifier, load_model, model_metadata, write_export

    space = load_space(name)
    hp = sampled_hyperparameters(space)
    info = example_info(space, hp)
    torch.manual_seed(0)
    classifier = NormalizedClassifier(model_for(space, hp, info), info.mean, info.std).eval()
    meta = model_metadata(space, info, {"metric": "val_acc", "mode": "max"}, hp, 1, "t", 0.5)
    write_export(tmp_path, classifier, meta)
    images = torch.rand(3, info.in_channels, info.image_size, info.image_size)
    with torch.no_grad():
        expected = classifier(images)
        assert torch.allclose(load_model(tmp_path)(images), expected, atol=1e-5)
        assert torch.allclose(torch.export.load(str(tmp_path / "model.pt2")).module()(images), expected, atol=1e-4)
    assert load_model(tmp_path).class_names == list(info.class_names)


def test_fashion_mnist_reads_torchvisions_layout(mnist_root, tmp_path):
    """FashionMNIST is MNIST's reader on another folder (FashionMNIST/raw, the same IDX files): checked and split as
    the search does, with its own classes and normalization."""
    from trainables.data import get_dataset

    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    for path in (mnist_root / "MNIST" / "raw").iterdir():
        (raw / path.name).symlink_to(path)
    fashion = get_dataset("fashion_mnist")
    assert fashion.check(tmp_path, {}, download=False, strict=True, seed=0) == []
    images, labels = fashion.load_split(tmp_path, "val", 0.1, seed=0, limit=50)
    assert images.shape == (50, 1, 28, 28) and labels.max() < 10
    info = fashion.info(str(tmp_path), {})
    assert info.class_names[0] == "T-shirt/top" and info.mean == (0.5,)
