"""Datasets decoded once into uint8 tensors and fed from memory, sharded per rank.

Checking that a dataset is present imports neither torch nor Ray, so the CLI can refuse a bad
`data.root` before anything heavy starts.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from search.errors import UsageError


@dataclass(frozen=True)
class IdxDataset:
    """A dataset stored as IDX files in torchvision's layout: <root>/<folder>/raw/<files>."""

    name: str
    folder: str
    mean: tuple[float, ...]
    std: tuple[float, ...]
    class_names: tuple[str, ...]
    torchvision_class: str
    image_size: int = 28
    in_channels: int = 1

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def raw_dir(self, root: str | Path) -> Path:
        return Path(root).expanduser() / self.folder / "raw"

    def split_files(self, root: str | Path, train: bool) -> tuple[Path, Path]:
        prefix = "train" if train else "t10k"
        raw = self.raw_dir(root)
        return raw / f"{prefix}-images-idx3-ubyte", raw / f"{prefix}-labels-idx1-ubyte"

    def missing_files(self, root: str | Path) -> list[Path]:
        files = [*self.split_files(root, True), *self.split_files(root, False)]
        return [f for f in files if not f.is_file()]

    def download(self, root: str | Path) -> None:
        """torchvision's own download path, for users who are online."""
        import torchvision.datasets

        dataset_class = getattr(torchvision.datasets, self.torchvision_class)
        for train in (True, False):
            dataset_class(root=str(Path(root).expanduser()), train=train, download=True)

    def load(self, root: str | Path, train: bool, limit: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(images uint8 [N, C, H, W], labels int64 [N]) of one split, the first `limit` if > 0."""
        image_file, label_file = self.split_files(root, train)
        images = read_idx(image_file)
        labels = read_idx(label_file).astype(np.int64)
        if len(images) != len(labels):
            raise ValueError(f"{image_file} has {len(images)} images but {label_file} has {len(labels)} labels")
        if limit:
            images, labels = images[:limit], labels[:limit]
        return images[:, None, :, :], labels


MNIST = IdxDataset(
    name="mnist",
    folder="MNIST",
    mean=(0.1307,),
    std=(0.3081,),
    class_names=tuple(str(d) for d in range(10)),
    torchvision_class="MNIST",
)

FASHION_MNIST = IdxDataset(
    name="fashion_mnist",
    folder="FashionMNIST",
    mean=(0.5,),
    std=(0.5,),
    class_names=("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"),
    torchvision_class="FashionMNIST",
)

DATASETS = {d.name: d for d in (MNIST, FASHION_MNIST)}

_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


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
        raise ValueError(f"{path}: header says shape {shape} ({expected} bytes) but the file holds {len(raw) - header_end}")
    return np.frombuffer(raw, dtype=dtype, offset=header_end).reshape(shape)


def get_dataset(name: str) -> IdxDataset:
    return DATASETS[name]


def ensure_dataset(name: str, root: str, download: bool) -> None:
    """Make sure the dataset is under `root`, downloading it if allowed; else a UsageError naming what is missing."""
    dataset = get_dataset(name)
    missing = dataset.missing_files(root)
    if not missing:
        return
    reason = "data.download=false"
    if download:
        try:
            dataset.download(root)
        except Exception as exc:  # offline, or a mirror failed: report it, never train on nothing
            reason = f"download failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        missing = dataset.missing_files(root)
        if not missing:
            return
    names = ", ".join(str(p.relative_to(Path(root).expanduser())) for p in missing)
    raise UsageError(
        f"data.root={root}: {dataset.name} is missing {names} ({reason}); put torchvision's "
        f"{dataset.torchvision_class} files there, or run online with data.download=true"
    )
