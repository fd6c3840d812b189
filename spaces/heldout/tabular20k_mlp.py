"""A held-out workload: `tabular_mlp`'s fully connected net and searched ranges on a new draw of its tabular data
(other clusters: random state 2311) with 20,000 validation and 20,000 test rows, so one row is 0.005 points and two
configurations a few tenths of a point apart can be told apart (2,000 could not: `tabular_mlp`'s exhaustive floor
was 0.50 points). 6,000 training rows, as `tabular_mlp`.

No default of the search was chosen on this work: its learning-curve table is marked held out
(benchmarks/README.md) and the tuning scripts refuse to read it. Searched as
`python -m search run space=spaces.heldout.tabular20k_mlp`.
"""

import dataclasses

from spaces import OwnData
from spaces.heldout.tabular_mlp import SPACE as TABULAR_MLP
from spaces.heldout.tabular_mlp import make_rows

SPLITS = {"train": 6000, "val": 20000, "test": 20000}


def tabular(root: str, seed: int) -> OwnData:
    """The rows as floats in 0..1 [N, 1, 6, 6] (each feature scaled by its range), the same for every seed and root."""
    return make_rows(2311, SPLITS)


SPACE = dataclasses.replace(
    TABULAR_MLP,
    name="tabular20k_mlp",
    description="held out: tabular_mlp's net and ranges on a new draw of rows, 20,000 validation and test rows",
    dataset=f"{__file__}:tabular",
)
