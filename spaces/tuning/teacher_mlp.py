"""A tuning workload for the fully connected net with validation big enough to tell methods apart: `mlp_mnist`'s
searched hyperparameters and ranges (imported, so they stay the same) on rows labelled by a random teacher network,
not by the held-out workloads' generator (scikit-learn's clusters, spaces/heldout/). 36 Gaussian features, laid out as
a 6x6 single-channel image; ten classes, the argmax of a random two-layer tanh net's outputs, each output's offset set
so that the classes are about equally common; 3% of labels drawn again at random. Fixed random state, no download;
6,000 training, 20,000 validation and 20,000 test rows (one row is 0.005 points).

Defaults may be chosen on it: it is not held out. Searched as `python -m search run space=spaces.tuning.teacher_mlp`.
"""

import dataclasses

import numpy as np

from spaces import OwnData
from spaces.heldout.tabular_mlp import CLASSES, SIDE, as_rows
from spaces.mlp_mnist import SPACE as MLP_MNIST

HIDDEN, NOISE = 64, 0.03
SPLITS = {"train": 6000, "val": 20000, "test": 20000}


def teacher(root: str, seed: int) -> OwnData:
    """The rows as floats in 0..1 [N, 1, 6, 6] (each feature scaled by its range), the same for every seed and root."""
    return make_rows(4057, SPLITS)


def make_rows(state: int, splits: dict[str, int]) -> OwnData:
    """Rows drawn and labelled by random state `state`, as many in each split as `splits` says."""
    draw = np.random.default_rng(state)
    features = draw.standard_normal((sum(splits.values()), SIDE * SIDE))
    first = draw.standard_normal((SIDE * SIDE, HIDDEN)) / np.sqrt(SIDE * SIDE)
    second = draw.standard_normal((HIDDEN, CLASSES)) / np.sqrt(HIDDEN)
    outputs = np.tanh(features @ first * 2.0) @ second
    offsets = np.zeros(CLASSES)
    for _ in range(200):  # move each output's offset until every class holds about a tenth of the rows
        shares = np.bincount((outputs - offsets).argmax(axis=1), minlength=CLASSES) / len(outputs)
        offsets += 0.5 * (shares - 1 / CLASSES)
    labels = (outputs - offsets).argmax(axis=1)
    redrawn = draw.random(len(labels)) < NOISE
    labels[redrawn] = draw.integers(0, CLASSES, redrawn.sum())
    return as_rows(features, labels, splits)  # the layout only: tabular_mlp's data is not read


SPACE = dataclasses.replace(
    MLP_MNIST,
    name="teacher_mlp",
    description="tuning: mlp_mnist's fully connected net and searched ranges on rows labelled by a random teacher net",
    dataset=f"{__file__}:teacher",
)
