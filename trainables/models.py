"""Model builders used by the spaces. Each returns a plain `nn.Module` producing class logits."""

from __future__ import annotations

from torch import nn


def resnet18(in_channels: int, num_classes: int) -> nn.Module:
    """torchvision ResNet-18 with `conv1` replaced for `in_channels` (as the Ray Train MNIST tutorials do)."""
    from torchvision.models import resnet18 as tv_resnet18

    model = tv_resnet18(num_classes=num_classes)
    if in_channels != 3:
        model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)
    return model


MODELS = {"resnet18": resnet18}


def build_model(architecture: str, args: dict) -> nn.Module:
    if architecture not in MODELS:
        raise ValueError(f"unknown architecture {architecture!r}; known: {', '.join(MODELS)}")
    return MODELS[architecture](**args)
