"""MNIST's IDX files: headers checked, files decoded, and the seeded per-class validation split."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from trainables.foundation.errors import UsageError

SPLITS = ("train", "val", "test")
_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def idx_header(path: Path, item_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape an unsigned-byte IDX file's header declares, checked against its size and `item_shape`."""
    ndim = 1 + len(item_shape)
    expected = f"an unsigned-byte IDX file of {' x '.join(['N', *map(str, item_shape)])}"
    with open(path, "rb") as stream:
        head = stream.read(4 + 4 * ndim)
    if len(head) < 4 + 4 * ndim or head[:2] != b"\0\0" or head[2] != 0x08 or head[3] != ndim:
        magic = head[:4].hex() if len(head) >= 4 else f"{len(head)} bytes"
        raise UsageError(f"{path}: not {expected} (header {magic}, expected 000008{ndim:02x})")
    shape = struct.unpack(f">{ndim}I", head[4:])
    if tuple(shape[1:]) != item_shape:
        raise UsageError(f"{path}: items of {' x '.join(map(str, shape[1:]))}; expected {expected}")
    size, wanted = path.stat().st_size, len(head) + int(np.prod(shape))
    if size != wanted:
        raise UsageError(
            f"{path}: {size} bytes, but its header declares {shape[0]} items ({wanted} bytes): "
            "the file is truncated or corrupt; download it again"
        )
    return shape


def read_idx(path: str | Path) -> np.ndarray:
    """Decode an (uncompressed) IDX file into an array; a corrupt header raises ValueError naming the file."""
    raw = Path(path).read_bytes()
    if len(raw) < 4:
        raise ValueError(f"{path}: not an IDX file (too short)")
    zero, dtype_code, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype_code not in _IDX_DTYPES or not 1 <= ndim <= 4:
        raise ValueError(f"{path}: not an IDX file (bad magic number)")
    header_end = 4 + 4 * ndim
    shape = struct.unpack(f">{ndim}I", raw[4:header_end])
    dtype = np.dtype(_IDX_DTYPES[dtype_code])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header_end != expected:
        raise ValueError(
            f"{path}: header says shape {shape} ({expected} bytes) but the file holds {len(raw) - header_end}"
        )
    return np.frombuffer(raw, dtype=dtype, offset=header_end).reshape(shape)


def holdout(labels: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) indices: per class, `fraction` of its samples (at least one) go to validation."""
    generator = np.random.default_rng(seed)
    held = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        generator.shuffle(members)
        held.append(members[: max(1, round(fraction * len(members)))])
    val_index = np.sort(np.concatenate(held)) if held else np.array([], dtype=np.int64)
    return np.setdiff1d(np.arange(len(labels)), val_index), val_index


def carved(images: np.ndarray, labels: np.ndarray, split: str, val_fraction: float, seed: int, limit: int = 0):
    """`train` or `val` carved from a labelled training split (`holdout`), any other as it is; the first `limit`."""
    if split in ("train", "val"):
        train_index, val_index = holdout(labels, val_fraction, seed)
        pick = train_index if split == "train" else val_index
        images, labels = images[pick], labels[pick]
    return images[: limit or None], labels[: limit or None]  # limit 0: all
