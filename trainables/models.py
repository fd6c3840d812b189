"""Model builders used by the spaces. Each returns a plain `nn.Module` producing class logits."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

from torch import nn


STEMS = ("imagenet", "small")


def resnet18(in_channels: int, num_classes: int, stem: str = "imagenet") -> nn.Module:
    """torchvision ResNet-18 with `conv1` replaced for `in_channels` (as the Ray Train MNIST tutorials do).
    `stem="small"`: a 3x3 stride-1 `conv1` for small images (28x28 reaches the first block as 14x14 instead of 7x7,
    at four times the compute); `imagenet`: the tutorials' 7x7 stride-2 one."""
    from torchvision.models import resnet18 as tv_resnet18

    if stem not in STEMS:
        raise ValueError(f"stem={stem}: allowed values are {', '.join(STEMS)}")
    model = tv_resnet18(num_classes=num_classes)
    if stem == "small":
        model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
    elif in_channels != 3:
        model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)
    return model


def resnet50(in_channels: int, num_classes: int, freeze_backbone: bool = False) -> nn.Module:
    """torchvision ResNet-50 with a new `num_classes` head; pretrained weights are loaded afterwards, by shape."""
    from torchvision.models import resnet50 as tv_resnet50

    model = tv_resnet50(num_classes=num_classes)
    if freeze_backbone:
        for name, parameter in model.named_parameters():
            parameter.requires_grad = name.startswith("fc.")
    return model


class SmallCNN(nn.Module):
    """The PyTorch MNIST example's net: two 3x3 convolutions (32, 64), max-pool, then 128 -> classes."""

    def __init__(self, in_channels: int, num_classes: int, image_size: int = 28, dropout: float = 0.25):
        super().__init__()
        pooled = (image_size - 4) // 2
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 32, 3, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Dropout(dropout), nn.Flatten(),
        )  # fmt: skip
        self.classifier = nn.Sequential(
            nn.Linear(64 * pooled * pooled, 128), nn.ReLU(), nn.Dropout(2 * dropout), nn.Linear(128, num_classes)
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def cnn(in_channels: int, num_classes: int, image_size: int = 28, dropout: float = 0.25) -> nn.Module:
    return SmallCNN(in_channels, num_classes, image_size, dropout)


def mlp(in_channels: int, num_classes: int, image_size: int = 28, hidden: int = 256, layers: int = 2,
        dropout: float = 0.0) -> nn.Module:  # fmt: skip
    """The 'vanilla' baseline: fully connected layers on the flattened pixels."""
    blocks: list[nn.Module] = [nn.Flatten()]
    width = in_channels * image_size * image_size
    for _ in range(layers):
        blocks += [nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(dropout)]
        width = hidden
    blocks.append(nn.Linear(width, num_classes))
    return nn.Sequential(*blocks)


MODELS = {"resnet18": resnet18, "resnet50": resnet50, "cnn": cnn, "mlp": mlp}


def resolve_builder(architecture: str):
    """A MODELS name, or "path/to/file.py:function" / "package.module:function" for a user's own model."""
    if architecture in MODELS:
        return MODELS[architecture]
    location, _, function = architecture.rpartition(":")
    if not location or not function:
        raise ValueError(f"unknown architecture {architecture!r}; known: {', '.join(MODELS)} or 'file.py:function'")
    if location.endswith(".py"):
        spec = importlib.util.spec_from_file_location(f"user_model_{Path(location).stem}", location)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(location)
    return getattr(module, function)


def build_model(architecture: str, args: dict) -> nn.Module:
    return resolve_builder(architecture)(**args)


PRETRAINED = {"resnet18": "ResNet18_Weights", "resnet50": "ResNet50_Weights"}


def download_pretrained(architecture: str) -> str:
    """torchvision's own download of the ImageNet weights into torch's hub cache; returns the file."""
    import torch
    import torchvision.models

    if architecture not in PRETRAINED:
        raise ValueError(f"no pretrained weights known for {architecture}")
    weights = getattr(torchvision.models, PRETRAINED[architecture]).DEFAULT
    weights.get_state_dict(progress=False)  # downloads into the hub cache, or raises when offline
    return str(Path(torch.hub.get_dir()) / "checkpoints" / Path(weights.url).name)
