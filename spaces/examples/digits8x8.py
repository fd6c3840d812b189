"""A space of one's own: its own model, its own data and its own loss, in one file.

scikit-learn's 8x8 digits (1,797 of them, bundled with scikit-learn: no download) for a small CNN trained with a
focal loss. Searched as `python -m search run space=spaces.examples.digits8x8` (or `space=` this file's path).
This folder is not a package, so its spaces are no built-in ones: copy the file and change what you need.
"""

import numpy as np
import torch.nn.functional as F
from optuna.distributions import CategoricalDistribution, FloatDistribution
from torch import nn

from spaces import OwnData, Space

TEST = 400  # the last 400 digits: the test split, which the search never sees


def digits(root: str, seed: int) -> OwnData:
    """The digits as uint8 [N, 1, 8, 8] (scikit-learn's ink, 0..16, scaled to 0..255); no `val`: the search holds
    out `data.val_fraction` of the training digits, drawn with `seed`. `root` (data.root) is not needed here."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = np.round(bunch.images * (255 / 16)).astype(np.uint8)[:, None]
    labels = bunch.target
    return OwnData(
        train=(images[:-TEST], labels[:-TEST]),
        test=(images[-TEST:], labels[-TEST:]),
        class_names=[str(digit) for digit in range(10)],
    )


def small_cnn(in_channels: int, num_classes: int, width: int = 16) -> nn.Module:
    """Two 3x3 convolutions and a max-pool: 8x8 in, 4x4 x (2 x width) features, then the classes."""
    return nn.Sequential(
        nn.Conv2d(in_channels, width, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(2 * width * 16, num_classes),
    )


def small_cnn_args(hp: dict, data) -> dict:
    """The builder's arguments: the data's channels and classes (a DataInfo), the trial's width."""
    return {"in_channels": data.in_channels, "num_classes": data.num_classes, "width": hp["width"]}


def focal_loss(logits, labels, gamma: float = 2.0):
    """Cross-entropy that weighs the digits the model still gets wrong more (Lin et al., focal loss)."""
    log_p = F.log_softmax(logits.float(), dim=1).gather(1, labels[:, None]).squeeze(1)
    return (-((1 - log_p.exp()) ** gamma) * log_p).mean()


SPACE = Space(
    name="digits8x8",
    description="a small CNN of its own on scikit-learn's 8x8 digits, with a focal loss",
    architecture=f"{__file__}:small_cnn",
    dataset=f"{__file__}:digits",
    loss=f"{__file__}:focal_loss",
    model_args=small_cnn_args,
    hyperparameters={"lr": FloatDistribution(0.001, 0.1, log=True), "width": CategoricalDistribution([8, 16, 32])},
    constants={"optimizer": "adam", "batch_size": 64},
)
