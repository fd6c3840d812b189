"""A space's own data: `dataset="path/to/file.py:function"` returning an `OwnData`, checked, fed from memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainables.data_info import DataInfo
from trainables.foundation.errors import UsageError
from trainables.idx_files import SPLITS, carved, holdout
from trainables.own_refs import own_function

STATS_IMAGES = 10_000  # the default mean and std are measured on the first this-many training images


@dataclass(frozen=True)
class OwnData:
    """What a space's own dataset function returns: `train`, `val`, `test` as (images, labels), images uint8 or floats
    in 0..1 shaped [N, C, H, W] (any H and W) or [N, C, L] (sequences), labels 0..len(class_names) - 1 (numpy arrays
    or CPU tensors). `val` None: held out from `train`; `test` None: no test accuracy; `mean`, `std` per channel
    (None: measured)."""

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
        self.val_fraction = float(getattr(getattr(run, "data", None), "val_fraction", 0.1))

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
        loaded = self.loaded(root, seed)
        if "val" not in loaded.splits:
            refuse_empty_carve(f"dataset={self.name}", loaded.splits["train"][1], self.val_fraction, seed)
        if len(loaded.info.shape) == 2:  # [N, A, B]: sequences, never grayscale images without their channel axis
            channels, length = loaded.info.shape
            print(
                f"data: dataset={self.name} gives [N, {channels}, {length}]: read as sequences of {channels} channels "
                f"and length {length} (images give [N, C, H, W]: [N, 1, H, W] for grayscale)",
                flush=True,
            )
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
    sizes = tuple(int(d) for d in shape[1:])  # (H, W) or (L,); image_size: H (a square image's side) or L
    return Loaded(splits, DataInfo(names, int(shape[0]), sizes[0], mean, std, sizes=sizes))


def checked_split(where: str, split: str, pair, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(images, labels) of one split as the feed takes them: uint8 kept, floats scaled to 0..255; labels int64."""
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise UsageError(f"{where}: {split} is a {type(pair).__name__}; expected a pair (images, labels)")
    images, labels = as_array(where, split, "images", pair[0]), as_array(where, split, "labels", pair[1])
    if images.ndim not in (3, 4):
        raise UsageError(
            f"{where}: {split} images have shape {tuple(images.shape)}; expected [N, C, H, W] (or [N, C, L])"
        )
    if len(images) == 0:
        raise UsageError(f"{where}: {split} has no images")
    if 0 in images.shape[1:]:
        raise UsageError(
            f"{where}: {split} images are {_dims(images.shape[1:])}; expected at least one channel and one pixel"
        )
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


def as_array(where: str, split: str, what: str, value) -> np.ndarray:
    """A numpy array or CPU tensor as a numpy array; anything else (a tensor needing grad, on a GPU) in one line."""
    if getattr(value, "requires_grad", False):
        raise UsageError(f"{where}: {split} {what} are a tensor that requires grad; return it .detach()ed")
    device = getattr(value, "device", None)
    if device is not None and getattr(device, "type", "cpu") != "cpu":
        raise UsageError(f"{where}: {split} {what} are a tensor on {device}; return it on the CPU (.cpu())")
    try:
        return np.asarray(value)
    except Exception as exc:  # a ragged list, an object that is no array: say what broke, in one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise UsageError(
            f"{where}: {split} {what} cannot be read as an array ({type(exc).__name__}: {first}); "
            "expected a numpy array or a CPU tensor"
        ) from None


def refuse_empty_carve(where: str, labels: np.ndarray, val_fraction: float, seed: int) -> None:
    """No `val` given: the held-out share (at least one image a class) must leave training images."""
    train_index, _ = holdout(labels, val_fraction, seed)
    if len(train_index) == 0:
        raise UsageError(
            f"{where}: train has {len(labels)} images, all held out for validation (data.val_fraction="
            f"{val_fraction:g}, at least one a class), so none are left to train on; give more images a class "
            "or val=(images, labels)"
        )


def normalization(where: str, data: OwnData, train: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(mean, std) per channel in the 0..1 scale: the ones given, or measured on the first training images."""
    channels = train.shape[1]
    sample = train[:STATS_IMAGES].astype(np.float64) / 255.0
    axes = (0, *range(2, train.ndim))  # all but the channel
    measured = {"mean": sample.mean(axis=axes), "std": sample.std(axis=axes)}
    values = {}
    for name in ("mean", "std"):
        given = getattr(data, name)
        if given is None:
            values[name] = tuple(float(v) if name == "mean" or v > 0 else 1.0 for v in measured[name])
            continue
        try:
            given = tuple(float(v) for v in np.atleast_1d(np.asarray(given, dtype=np.float64)).ravel())
        except (TypeError, ValueError):
            raise UsageError(f"{where}: {name} is {given!r}; expected {channels} number(s), one per channel") from None
        if len(given) != channels or not all(np.isfinite(given)) or (name == "std" and min(given) <= 0):
            raise UsageError(
                f"{where}: {name} is {given}; expected {channels} value(s), one per channel, each finite"
                + (" and > 0" if name == "std" else "")
            )
        values[name] = given
    return values["mean"], values["std"]


def _dims(shape) -> str:
    return "x".join(str(d) for d in shape)
