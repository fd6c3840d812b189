"""Model builders used by the spaces. Each returns a plain `nn.Module` producing class logits."""

from __future__ import annotations

from pathlib import Path

from torch import nn

from trainables.foundation.choices import STEMS
from trainables.own_refs import own_function


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (self.downsample(x) if self.downsample is not None else x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (self.downsample(x) if self.downsample is not None else x))


class ResNet(nn.Module):
    """torchvision's ResNet, module for module (tests/test_models.py), without torchvision's ~1 s import."""

    def __init__(self, block, layers: list[int], num_classes: int = 1000, width: int = 64):
        """`width`: the first stage's channels (torchvision's 64); each later stage doubles them."""
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, 2 * width, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 4 * width, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 8 * width, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * width * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def resnet18(in_channels: int, num_classes: int, stem: str = "imagenet", width: int = 64) -> nn.Module:
    """ResNet-18 with `conv1` for `in_channels`; `stem="small"`: a 3x3 stride-1 `conv1` for small images."""
    if stem not in STEMS:
        raise ValueError(f"stem={stem}: allowed values are {', '.join(STEMS)}")
    model = ResNet(BasicBlock, [2, 2, 2, 2], num_classes=num_classes, width=width)
    if stem == "small":
        model.conv1 = nn.Conv2d(in_channels, width, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
    elif in_channels != 3:
        model.conv1 = nn.Conv2d(in_channels, width, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)
    return model


def resnet50(in_channels: int, num_classes: int, freeze_backbone: bool = False) -> nn.Module:
    """ResNet-50 (torchvision's) with a new `num_classes` head; pretrained weights are loaded afterwards, by shape."""
    model = ResNet(Bottleneck, [3, 4, 6, 3], num_classes=num_classes)
    if freeze_backbone:
        for name, parameter in model.named_parameters():
            parameter.requires_grad = name.startswith("fc.")
    return model


class SmallCNN(nn.Module):
    """The PyTorch MNIST example's net, its channels scaled by `width` (width, 2 x width, 4 x width)."""

    def __init__(
        self, in_channels: int, num_classes: int, image_size: int = 28, dropout: float = 0.25, width: int = 32
    ):
        super().__init__()
        pooled = (image_size - 4) // 2
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, 1),
            nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, 1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Dropout(dropout),
            nn.Flatten(),
        )
        self.classifier = nn.Sequential(
            nn.Linear(2 * width * pooled * pooled, 4 * width),
            nn.ReLU(),
            nn.Dropout(2 * dropout),
            nn.Linear(4 * width, num_classes),
        )

    def forward(self, x):
        return self.classifier(self.features(x))


def mlp(
    in_channels: int, num_classes: int, image_size: int = 28, hidden: int = 256, layers: int = 2, dropout: float = 0.0
) -> nn.Module:
    """The 'vanilla' baseline: fully connected layers on the flattened pixels."""
    blocks: list[nn.Module] = [nn.Flatten()]
    width = in_channels * image_size * image_size
    for _ in range(layers):
        blocks += [nn.Linear(width, hidden), nn.ReLU(), nn.Dropout(dropout)]
        width = hidden
    blocks.append(nn.Linear(width, num_classes))
    return nn.Sequential(*blocks)


MODELS = {"resnet18": resnet18, "resnet50": resnet50, "cnn": SmallCNN, "mlp": mlp}


def build_model(architecture: str, args: dict) -> nn.Module:
    """A MODELS name, or "path/to/file.py:function" / "package.module:function" for a user's own model, built."""
    if architecture in MODELS:
        return MODELS[architecture](**args)
    if ":" not in architecture:
        raise ValueError(f"unknown architecture {architecture!r}; known: {', '.join(MODELS)} or 'file.py:function'")
    return own_function("architecture", architecture)(**args)  # a file imported once per process


PRETRAINED = {"resnet18": "ResNet18_Weights", "resnet50": "ResNet50_Weights"}


def download_pretrained(architecture: str) -> str:
    """torchvision's own download of the ImageNet weights into torch's hub cache; returns the file."""
    import torch
    import torchvision.models

    if architecture not in PRETRAINED:
        raise ValueError(f"no pretrained weights known for {architecture}")
    from trainables.foundation.fetching import hold, make_folders, put_in_place, staging_beside

    weights = getattr(torchvision.models, PRETRAINED[architecture]).DEFAULT
    target = make_folders(Path(torch.hub.get_dir()) / "checkpoints") / Path(weights.url).name
    if target.is_file() and hold(target):  # read by this search: another process's refusal keeps it
        weights.get_state_dict(progress=False)  # read whole, as a download is
        return str(target)
    with staging_beside(target) as staging:  # downloaded aside: a refused run takes back its own download only
        weights.get_state_dict(progress=False, model_dir=str(staging))  # raises when offline
        put_in_place(staging / target.name, target)
    return str(target)


def model_for(space, hp: dict, info) -> nn.Module:
    """The `nn.Module` of a trial: the space's architecture, built with `Space.builder_args`."""
    return build_model(space.architecture, space.builder_args(hp, info))
