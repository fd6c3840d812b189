"""What images look like, light on dark or dark on light (an image's border tells its background), measured on the
training split at export and on every input `predict` reads: an input of the other polarity gets a hint instead of a
confident wrong class."""

from __future__ import annotations

import numpy as np

SAMPLE = 512  # training images measured at export: spread over the split, enough for a share to 5%
CONSISTENT = 0.9  # the share of training images whose background must agree for the split to have one


def border_means(images: np.ndarray) -> np.ndarray:
    """The mean of each image's border, in [0, 1]: uint8 images [N, C, H, W]."""
    images = np.asarray(images, dtype=np.float64) / 255.0
    edges = [images[:, :, 0, :], images[:, :, -1, :], images[:, :, :, 0], images[:, :, :, -1]]
    return np.concatenate([edge.reshape(len(images), -1) for edge in edges], axis=1).mean(axis=1)


def look_of(images: np.ndarray) -> dict:
    """How a training split looks (uint8 images [N, C, H, W]): its mean pixel value, the share of images on a dark
    background, and its background (`dark`, `light`, or `mixed` when fewer than CONSISTENT agree)."""
    dark = float((border_means(images) < 0.5).mean())
    background = "dark" if dark >= CONSISTENT else "light" if dark <= 1 - CONSISTENT else "mixed"
    mean = float(np.asarray(images, dtype=np.float64).mean() / 255.0)
    return {"mean": round(mean, 4), "dark_background_share": round(dark, 4), "background": background}


def polarity_hint(recorded: dict | None, name: str, images: np.ndarray) -> str | None:
    """One line when most of `images` (uint8 [N, C, H, W], one input file's) are on the other background than the
    training split's; None without a record, for a mixed split, or when they agree."""
    if not recorded or recorded.get("background") not in ("dark", "light") or not len(images):
        return None
    dark = float((border_means(images) < 0.5).mean())
    trained_dark = recorded["background"] == "dark"
    if (dark if not trained_dark else 1 - dark) <= 0.5:
        return None
    theirs, ours = ("light on dark", "dark on light") if trained_dark else ("dark on light", "light on dark")
    what = "this image is" if len(images) == 1 else f"{1 - dark if trained_dark else dark:.0%} of its images are"
    return f"hint: {name}: {what} {ours}; the model was trained on {theirs} images: invert it"
