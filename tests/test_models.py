"""The ResNets written out in trainables.models are torchvision's, module for module and weight for weight."""

import pytest
import torch
from torchvision import models as tv

from trainables.models import resnet18, resnet50


@pytest.mark.parametrize("stem", ["imagenet", "small"])
def test_resnet18_draws_torchvisions_weights_and_computes_the_same(stem):
    torch.manual_seed(0)
    ours = resnet18(1, 10, stem=stem)
    torch.manual_seed(0)
    theirs = tv.resnet18(num_classes=10)
    theirs.conv1 = torch.nn.Conv2d(1, 64, *((3, 1, 1) if stem == "small" else (7, 2, 3)), bias=False)
    assert_same(ours, theirs, torch.randn(2, 1, 28, 28))


def test_resnet50_draws_torchvisions_weights_and_computes_the_same():
    torch.manual_seed(0)
    ours = resnet50(3, 2)
    torch.manual_seed(0)
    assert_same(ours, tv.resnet50(num_classes=2), torch.randn(1, 3, 64, 64))


def assert_same(ours, theirs, images):
    a, b = ours.state_dict(), theirs.state_dict()
    assert list(a) == list(b)
    assert all(torch.equal(a[key], b[key]) for key in a)
    ours.eval(), theirs.eval()
    with torch.no_grad():
        assert torch.equal(ours(images), theirs(images))


def test_the_builder_checks_list_of_shipped_builders_is_the_registrys():
    """model_check skips building (and importing torch) only for the registry's own builders, known there by name."""
    from trainables.model_check import SHIPPED
    from trainables.models import MODELS

    assert SHIPPED == tuple(MODELS)
