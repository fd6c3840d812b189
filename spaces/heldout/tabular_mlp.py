"""A held-out workload: `mlp_mnist`'s searched hyperparameters and ranges (imported, so they stay the same) on
synthesized tabular data: scikit-learn's `make_classification` (ten classes of two Gaussian clusters each in 36
features, 18 informative, 6 of them mixed again, 2% of labels flipped), fixed random state, no download; 6,000
training, 2,000 validation and 2,000 test rows, so one row is 0.05 points. The 36 features are laid out as a 6x6
single-channel image, which the fully connected net flattens back.

No default of the search was chosen on this work: its learning-curve table is marked held out
(benchmarks/README.md) and the tuning scripts refuse to read it. Searched as
`python -m search run space=spaces.heldout.tabular_mlp`.
"""

import dataclasses

import numpy as np

from spaces import OwnData
from spaces.mlp_mnist import SPACE as MLP_MNIST

SIDE, CLASSES = 6, 10
SPLITS = {"train": 6000, "val": 2000, "test": 2000}


def tabular(root: str, seed: int) -> OwnData:
    """The rows as floats in 0..1 [N, 1, 6, 6] (each feature scaled by its range), the same for every seed and root."""
    return make_rows(72, SPLITS)


def make_rows(state: int, splits: dict[str, int]) -> OwnData:
    """Rows of the clusters drawn by random state `state`, as many in each split as `splits` says."""
    from sklearn.datasets import make_classification

    features, labels = make_classification(
        n_samples=sum(splits.values()),
        n_features=SIDE * SIDE,
        n_informative=18,
        n_redundant=6,
        n_classes=CLASSES,
        n_clusters_per_class=2,
        class_sep=1.0,
        flip_y=0.02,
        random_state=state,
    )
    return as_rows(features, labels, splits)


def as_rows(features: np.ndarray, labels: np.ndarray, splits: dict[str, int]) -> OwnData:
    """36 features a row, each scaled by its range to 0..1 and laid out as a 6x6 single-channel image, cut into
    `splits` in order (`spaces/tuning/teacher_mlp.py` lays its rows out the same way)."""
    low, high = features.min(axis=0), features.max(axis=0)
    rows = ((features - low) / (high - low)).astype(np.float32).reshape(-1, 1, SIDE, SIDE)
    cut = np.cumsum(list(splits.values()))
    split = {name: (rows[a:b], labels[a:b]) for name, a, b in zip(splits, [0, *cut[:-1]], cut)}
    return OwnData(**split, class_names=[f"class {c}" for c in range(CLASSES)])


SPACE = dataclasses.replace(
    MLP_MNIST,
    name="tabular_mlp",
    description="held out: mlp_mnist's fully connected net and searched ranges on synthesized tabular data",
    dataset=f"{__file__}:tabular",
)
