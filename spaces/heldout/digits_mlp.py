"""A held-out workload: `mlp_mnist`'s searched hyperparameters and ranges (imported, so they stay the same) on
scikit-learn's bundled 8x8 digits (spaces/examples/digits8x8.py: no download; the last 400 digits are the test split).

No default of the search was chosen on this work: its learning-curve table is marked held out
(benchmarks/README.md) and the tuning scripts refuse to read it. This folder is not a package, so its spaces are no
built-in ones; searched as `python -m search run space=spaces.heldout.digits_mlp`.
"""

import dataclasses

from spaces.mlp_mnist import SPACE as MLP_MNIST

SPACE = dataclasses.replace(
    MLP_MNIST,
    name="digits_mlp",
    description="held out: mlp_mnist's fully connected net and searched ranges on scikit-learn's 8x8 digits",
    dataset="spaces.examples.digits8x8:digits",
)
