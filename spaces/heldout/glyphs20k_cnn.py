"""A held-out workload: `glyphs_cnn`'s CNN and searched ranges on a new draw of its glyphs (other strokes for every
class: random state 2311) with 20,000 validation and 20,000 test glyphs, so one glyph is 0.005 points and two
configurations a few tenths of a point apart can be told apart (2,000 could not: `glyphs_cnn`'s exhaustive floor
was 0.68 points). 6,000 training glyphs, as `glyphs_cnn`.

No default of the search was chosen on this work: its learning-curve table is marked held out
(benchmarks/README.md) and the tuning scripts refuse to read it. Searched as
`python -m search run space=spaces.heldout.glyphs20k_cnn`.
"""

import dataclasses

from spaces import OwnData
from spaces.heldout.glyphs_cnn import SPACE as GLYPHS_CNN
from spaces.heldout.glyphs_cnn import make_glyphs

SPLITS = {"train": 6000, "val": 20000, "test": 20000}


def glyphs(root: str, seed: int) -> OwnData:
    """The glyphs as floats in 0..1 [N, 1, 14, 14], the same for every seed and root (neither is needed here)."""
    return make_glyphs(2311, SPLITS)


SPACE = dataclasses.replace(
    GLYPHS_CNN,
    name="glyphs20k_cnn",
    description="held out: glyphs_cnn's CNN and ranges on a new draw of glyphs, 20,000 validation and test glyphs",
    dataset=f"{__file__}:glyphs",
)
