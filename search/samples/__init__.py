"""Data that ships with the package, so that the first search runs without network: 8,000 MNIST digits (`mnist/`;
mnist/README.md gives their source and licence) and image-folder trees drawn from them, unpacked once into
`~/.cache/search/samples/` (or $XDG_CACHE_HOME). numpy and Pillow only: no Ray, no torch."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from trainables.foundation.cache import cache_folder
from trainables.foundation.fetching import hold, put_in_place, staging_beside

PACKED = Path(__file__).resolve().parent / "mnist"
VERSION = "1"  # a new sample gets a new folder
RAW_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
PNGS_PER_CLASS = {"train": 40, "val": 10, "test": 10}  # the image-folder sample: a handful per digit


def samples_root() -> Path:
    return cache_folder("samples")


def _built(target: Path, build) -> Path:
    """`target`, built by `build(folder)` in a folder of this process's own beside it and moved into place when
    whole; another process's kept when it came first (trainables.foundation.fetching: a refusal takes back only its
    own)."""
    for _attempt in range(3):
        if target.is_dir() and hold(target):  # read from now on: another process's refusal keeps it
            return target
        with staging_beside(target) as partial:  # no half-built folder left behind
            build(partial / "built")
            put_in_place(partial / "built", target)
    raise OSError(f"{target}: taken back by another process each time it was built")


def mnist_root() -> Path:
    """A data.root holding the sample as torchvision lays out MNIST: <root>/MNIST/raw/<IDX files>."""

    def unpack(folder: Path) -> None:
        raw = folder / "MNIST" / "raw"
        raw.mkdir(parents=True)
        for name in RAW_FILES:
            with gzip.open(PACKED / f"{name}.gz") as packed, open(raw / name, "wb") as out:
                shutil.copyfileobj(packed, out)

    return _built(samples_root() / f"mnist-{VERSION}", unpack)


def digit_folders_root(split_by_pct: bool) -> Path:
    """An ImageFolder tree of digit PNGs (RGB, 28x28) drawn from the sample: `train/`, `val/` and `test/` with one
    folder per digit, or (`split_by_pct`) one folder per digit that the search splits itself."""
    import numpy as np
    from PIL import Image

    def read(name: str, offset: int) -> np.ndarray:
        return np.frombuffer(gzip.open(PACKED / f"{name}.gz").read(), np.uint8, offset=offset)

    def draw(folder: Path) -> None:
        images = {
            "train": read(RAW_FILES[0], 16).reshape(-1, 28, 28),
            "test": read(RAW_FILES[2], 16).reshape(-1, 28, 28),
        }
        labels = {"train": read(RAW_FILES[1], 8), "test": read(RAW_FILES[3], 8)}
        for split, count in PNGS_PER_CLASS.items():
            source = "test" if split == "test" else "train"
            for digit in range(10):
                picks = np.flatnonzero(labels[source] == digit)
                picks = picks[count : 2 * count] if split == "val" else picks[:count]  # val: other digits than train
                where = folder / (str(digit) if split_by_pct else f"{split}/{digit}")
                where.mkdir(parents=True, exist_ok=True)
                for index in picks:
                    Image.fromarray(images[source][index]).convert("RGB").save(where / f"{split}-{index}.png")

    return _built(samples_root() / f"digit-folders-{'pooled' if split_by_pct else 'split'}-{VERSION}", draw)
