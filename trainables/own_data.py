"""A space's own data: `dataset="path/to/file.py:function"` returning an `OwnData`, checked, fed from memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainables.data_info import DataInfo
from trainables.foundation.errors import UsageError
from trainables.idx_files import SPLITS, carved
from trainables.own_refs import own_function

STATS_IMAGES = 10_000  # the default mean and std are measured on the first this-many training images


@dataclass(frozen=True)
class OwnData:
    """What a space's own dataset function returns: `train`, `val`, `test` as (images, labels), images uint8 or floats
    in 0..1 shaped [N, C, H, W] with H == W, labels 0..len(class_names) - 1 (numpy arrays or CPU tensors). `val` None:
    held out from `train`; `test` None: no test accuracy; `mean`, `std` per channel (None: measured)."""

    train: tuple[Any, Any]
    class_names: Sequence[str]
    val: tuple[Any, Any] | None = None
    test: tuple[Any, Any] | None = None
    mean: Sequence[float] | None = None
    std: Sequence[float] | None = None


@dataclass(frozen=True)
class Loaded:
    """The checked splits (uint8, or float32 scaled to 0..255; labels int64) and what a model needs to know."""

    splits: dict[str, tuple[np.ndarray, np.ndarray]]
    info: DataInfo


class OwnDataset:
    """A space's own dataset, answering as the built-in ones in trainables.data do (check, info, load_split)."""

    def __init__(self, ref: str, run=None):
        self.name = ref
        self.space_ref = getattr(run, "space", "") or ""
        self.seed = int(getattr(run, "seed", 0) or 0)

    def loaded(self, root, seed: int) -> Loaded:
        key = (self.name, self.space_ref, str(root), seed)
        if key not in _LOADED:
            _LOADED.clear()  # one dataset kept per process: a reused trial process keeps the last one
            function = own_function("dataset", self.name, self.space_ref)
            try:
                data = function(str(root), seed)
            except UsageError:
                raise
            except Exception as exc:  # the user's function: say what broke, in one line
                first = str(exc).splitlines()[0] if str(exc) else ""
                raise UsageError(
                    f"dataset={self.name}: {function.__name__}(root, seed) raised {type(exc).__name__}: {first}"
                ) from None
            _LOADED[key] = checked(self.name, data)
        return _LOADED[key]

    def check(self, root, hp: dict, download: bool, strict: bool, seed: int) -> list[str]:
        """Preflight: call the function and check what it returns; refused in one line. Returns files to skip (none)."""
        self.loaded(root, seed)
        return []

    def info(self, root, hp: dict) -> DataInfo:
        return self.loaded(root, self.seed).info

    def has_test_split(self, root) -> bool:
        return "test" in self.loaded(root, self.seed).splits

    def load_split(self, root, split: str, val_fraction: float, seed: int, limit: int = 0):
        """(images [N, C, H, W], labels int64 [N]) of one split, the first `limit` if > 0 (see `carved`)."""
        if split not in SPLITS:
            raise ValueError(f"split={split}: one of {', '.join(SPLITS)}")
        splits = self.loaded(root, seed).splits
        if split == "test" or "val" in splits:  # given by the function: as it is
            images, labels = splits[split]
            return images[: limit or None], labels[: limit or None]
        return carved(*splits["train"], split, val_fraction, seed, limit)


_LOADED: dict[tuple, Loaded] = {}


def checked(ref: str, data) -> Loaded:
    """The function's OwnData, checked and converted; anything wrong is refused in one line naming `ref`."""
    where = f"dataset={ref}"
    if not isinstance(data, OwnData):
        raise UsageError(
            f"{where}: returned a {type(data).__name__}; expected OwnData(train=(images, labels), "
            "class_names=[...], val=..., test=...) (from spaces import OwnData)"
        )
    names = data.class_names
    if isinstance(names, str) or not isinstance(names, Sequence) or not names:
        raise UsageError(f"{where}: class_names is {names!r}; expected a list of names, one per class")
    names = tuple(str(n) for n in names)
    splits = {}
    for split in SPLITS:
        pair = getattr(data, split)
        if pair is not None or split == "train":
            splits[split] = checked_split(where, split, pair, len(names))
    shape = splits["train"][0].shape[1:]
    for split, (images, _) in splits.items():
        if images.shape[1:] != shape:
            raise UsageError(f"{where}: {split} images are {_dims(images.shape[1:])}; train's are {_dims(shape)}")
    mean, std = normalization(where, data, splits["train"][0])
    return Loaded(splits, DataInfo(names, int(shape[0]), int(shape[1]), mean, std))


def checked_split(where: str, split: str, pair, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(images, labels) of one split as the feed takes them: uint8 kept, floats scaled to 0..255; labels int64."""
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise UsageError(f"{where}: {split} is a {type(pair).__name__}; expected a pair (images, labels)")
    images, labels = np.asarray(pair[0]), np.asarray(pair[1])
    if images.ndim != 4:
        raise UsageError(f"{where}: {split} images have shape {tuple(images.shape)}; expected [N, C, H, W]")
    if len(images) == 0:
        raise UsageError(f"{where}: {split} has no images")
    if images.shape[2] != images.shape[3]:
        raise UsageError(f"{where}: {split} images are {_dims(images.shape[1:])}; expected square images (H == W)")
    if images.dtype != np.uint8:
        low, high = (float(images.min()), float(images.max())) if images.dtype.kind == "f" else (None, None)
        if low is None or not (np.isfinite(low) and np.isfinite(high) and 0.0 <= low and high <= 1.0):
            values = f" from {low:g} to {high:g}" if low is not None else ""
            raise UsageError(
                f"{where}: {split} images are {images.dtype}{values}; expected uint8 (0..255) or floats in 0..1"
            )
        images = np.multiply(images, 255.0, dtype=np.float32)  # the feed divides by 255, as it does uint8
    if labels.ndim != 1 or len(labels) != len(images):
        raise UsageError(
            f"{where}: {split} has {len(images)} images but labels of shape {tuple(labels.shape)}; "
            "expected one label per image"
        )
    if labels.dtype.kind not in "iu":
        raise UsageError(f"{where}: {split} labels are {labels.dtype}; expected integers 0..{classes - 1}")
    low, high = int(labels.min()), int(labels.max())
    if low < 0 or high >= classes:
        raise UsageError(
            f"{where}: {split} labels run from {low} to {high}; expected 0..{classes - 1} (one per class name)"
        )
    return np.ascontiguousarray(images), labels.astype(np.int64)


def normalization(where: str, data: OwnData, train: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(mean, std) per channel in the 0..1 scale: the ones given, or measured on the first training images."""
    channels = train.shape[1]
    sample = train[:STATS_IMAGES].astype(np.float64) / 255.0
    measured = {"mean": sample.mean(axis=(0, 2, 3)), "std": sample.std(axis=(0, 2, 3))}
    values = {}
    for name in ("mean", "std"):
        given = getattr(data, name)
        if given is None:
            values[name] = tuple(float(v) if name == "mean" or v > 0 else 1.0 for v in measured[name])
            continue
        given = tuple(float(v) for v in np.atleast_1d(np.asarray(given, dtype=np.float64)))
        if len(given) != channels or (name == "std" and min(given) <= 0):
            raise UsageError(
                f"{where}: {name} is {given}; expected {channels} value(s), one per channel"
                + (", each > 0" if name == "std" else "")
            )
        values[name] = given
    return values["mean"], values["std"]


def _dims(shape) -> str:
    return "x".join(str(d) for d in shape)
