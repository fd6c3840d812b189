"""Every registered space honours the contract: adding a space adds these tests."""

import subprocess
import sys

import optuna
import pytest

from search.space import Space, builtin_space_names, load_space

SPACES = builtin_space_names()


def test_registry_is_not_empty():
    assert "resnet_mnist" in SPACES


def test_spaces_import_without_ray_or_torch():
    code = (
        "import sys; from search.space import builtin_space_names, load_space\n"
        "[load_space(n) for n in builtin_space_names()]\n"
        "import search.config, search.commands\n"
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
            assert dist._contains(dist.to_internal_repr(trial.params[key]))


@pytest.mark.parametrize("name", SPACES)
def test_model_output_shape(name):
    import torch

    from trainables.data import get_dataset

    space = load_space(name)
    dataset = get_dataset(space.dataset)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0))
    hp = {**space.constants, **study.ask(space.hyperparameters).params}
    model = space.build_model(hp).eval()
    images = torch.zeros(2, dataset.in_channels, dataset.image_size, dataset.image_size)
    with torch.no_grad():
        assert model(images).shape == (2, dataset.num_classes)


def test_resnet_mnist_is_resnet18_with_one_channel_conv1():
    model = load_space("resnet_mnist").build_model({})
    assert model.conv1.in_channels == 1 and model.fc.out_features == 10
    assert type(model).__name__ == "ResNet" and len(model.layer1) == 2
