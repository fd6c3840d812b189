"""A held-out workload: `cnn_mnist`'s searched hyperparameters and ranges (imported, so they stay the same) on
scikit-learn's bundled 8x8 digits (spaces/examples/digits8x8.py: no download; the last 400 digits are the test split).
The small CNN takes the 8x8 input as it is (two 3x3 convolutions leave 4x4, the max-pool 2x2).

No default of the search was chosen on this work: its learning-curve table is marked held out
(benchmarks/README.md) and the tuning scripts refuse to read it. This folder is not a package, so its spaces are no
built-in ones; searched as `python -m search run space=spaces.heldout.digits_cnn`.
"""

import dataclasses

from spaces.cnn_mnist import SPACE as CNN_MNIST

SPACE = dataclasses.replace(
    CNN_MNIST,
    name="digits_cnn",
    description="held out: cnn_mnist's small CNN and searched ranges on scikit-learn's 8x8 digits",
    dataset="spaces.examples.digits8x8:digits",
)
