"""trainables.resnet is torchvision's ResNet without the torchvision import: same names, shapes, initialization and
outputs, so weights move both ways (torchvision's pretrained files included)."""

import pytest
import torch
import torchvision.models

from trainables import models


@pytest.mark.parametrize("architecture, in_channels", [("resnet18", 1), ("resnet18", 3), ("resnet50", 3)])
def test_same_weights_from_the_same_seed_and_same_outputs(architecture, in_channels):
    torch.manual_seed(0)
    ours = models.MODELS[architecture](in_channels=in_channels, num_classes=10)
    torch.manual_seed(0)
    theirs = getattr(torchvision.models, architecture)(num_classes=10)
    if in_channels != 3:
        theirs.conv1 = torch.nn.Conv2d(in_channels, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)
    ours_state, theirs_state = ours.state_dict(), theirs.state_dict()
    assert list(ours_state) == list(theirs_state)
    assert all(torch.equal(ours_state[k], theirs_state[k]) for k in ours_state)
    images = torch.rand(2, in_channels, 64, 64)
    ours.eval(), theirs.eval()
    torch.testing.assert_close(ours(images), theirs(images), rtol=0, atol=0)


def test_building_a_resnet_does_not_import_torchvision():
    import subprocess
    import sys

    code = "import sys; from trainables.models import resnet18; resnet18(1, 10); print('torchvision' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
