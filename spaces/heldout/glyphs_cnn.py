"""A held-out workload: `cnn_mnist`'s searched hyperparameters and ranges (imported, so they stay the same) on
synthesized 14x14 glyphs: ten classes, each three strokes whose ends, angle, size and place vary from glyph to glyph,
in pixel noise. Made here, deterministically (no download, no data root); 6,000 training, 2,000 validation and
2,000 test glyphs, so one glyph is 0.05 points. The CNN is cnn_mnist's at width 16 (16, 32, fc 64).

No default of the search was chosen on this work: its learning-curve table is marked held out
(benchmarks/README.md) and the tuning scripts refuse to read it. Searched as
`python -m search run space=spaces.heldout.glyphs_cnn`.
"""

import dataclasses

import numpy as np

from spaces import OwnData
from spaces.cnn_mnist import SPACE as CNN_MNIST

SIZE, CLASSES, STROKES = 14, 10, 3
SPLITS = {"train": 6000, "val": 2000, "test": 2000}
JITTER, NOISE, STROKE_PX = 0.07, 0.35, 0.8  # a stroke end's spread (of the image's side), pixel noise, ink width


def glyphs(root: str, seed: int) -> OwnData:
    """The glyphs as floats in 0..1 [N, 1, 14, 14], the same for every seed and root (neither is needed here)."""
    return make_glyphs(72, SPLITS)


def make_glyphs(state: int, splits: dict[str, int]) -> OwnData:
    """Glyphs of the classes drawn by random state `state`, as many in each split as `splits` says."""
    rng = np.random.default_rng(state)
    prototypes = rng.uniform(0.15, 0.85, (CLASSES, STROKES, 2, 2))  # class, stroke, end, (y, x)
    count = sum(splits.values())
    labels = rng.permutation(np.arange(count) % CLASSES)
    ends = prototypes[labels] + rng.normal(0.0, JITTER, (count, STROKES, 2, 2))
    angle, scale = rng.uniform(-0.35, 0.35, count), rng.uniform(0.8, 1.1, count)
    cos, sin = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
    y, x = ends[..., 0] - 0.5, ends[..., 1] - 0.5
    shift = rng.uniform(-0.1, 0.1, (count, 1, 1, 2))
    ends = np.stack([cos * y - sin * x, sin * y + cos * x], axis=-1) * scale[:, None, None, None] + 0.5 + shift
    centres = (np.stack(np.meshgrid(np.arange(SIZE), np.arange(SIZE), indexing="ij"), -1).reshape(-1, 2) + 0.5) / SIZE
    start, along = ends[:, :, None, 0], (ends[:, :, 1] - ends[:, :, 0])[:, :, None]  # [N, strokes, 1, 2]
    t = np.clip(((centres - start) * along).sum(-1) / np.maximum((along**2).sum(-1), 1e-9), 0.0, 1.0)
    distance = np.linalg.norm(centres - (start + t[..., None] * along), axis=-1) * SIZE  # in pixels
    ink = np.exp(-0.5 * (distance / STROKE_PX) ** 2).max(axis=1)
    images = np.clip(ink + rng.normal(0.0, NOISE, ink.shape), 0.0, 1.0).reshape(count, 1, SIZE, SIZE)
    images, cut = images.astype(np.float32), np.cumsum(list(splits.values()))
    split = {name: (images[a:b], labels[a:b]) for name, a, b in zip(splits, [0, *cut[:-1]], cut)}
    return OwnData(**split, class_names=[f"glyph {c}" for c in range(CLASSES)])


SPACE = dataclasses.replace(
    CNN_MNIST,
    name="glyphs_cnn",
    description="held out: cnn_mnist's small CNN (width 16) and searched ranges on synthesized 14x14 glyphs",
    dataset=f"{__file__}:glyphs",
    constants={**CNN_MNIST.constants, "width": 16},
)
