"""Datasets decoded once into uint8 tensors and fed from memory, sharded per rank.

Checking that a dataset is present imports neither torch nor Ray, so the CLI can refuse a bad
`data.root` before anything heavy starts.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from trainables.foundation.errors import UsageError
from trainables.idx_files import holdout, idx_header, read_idx


@dataclass(frozen=True)
class DataInfo:
    """What a model and an export need to know about the data."""

    class_names: tuple[str, ...]
    in_channels: int
    image_size: int
    mean: tuple[float, ...]
    std: tuple[float, ...]

    @property
    def num_classes(self) -> int:
        return len(self.class_names)


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

    def info(self, root: str | Path, hp: dict) -> DataInfo:
        return DataInfo(self.class_names, self.in_channels, self.image_size, self.mean, self.std)

    def has_test_split(self, root: str | Path) -> bool:
        return True  # the t10k files, checked before the search

    def check(self, root: str | Path, hp: dict, download: bool, strict: bool, seed: int) -> list[str]:
        """Preflight: make sure the files are there (downloading if allowed) and whole: headers against sizes, labels
        against images and classes; reads headers and labels only. Returns files to skip (none)."""
        ensure_idx_dataset(self, str(root), download)
        for train in (True, False):
            image_file, label_file = self.split_files(root, train)
            images = idx_header(image_file, (self.image_size, self.image_size))
            labels = idx_header(label_file, ())
            if images[0] != labels[0]:
                raise UsageError(
                    f"{label_file}: {labels[0]} labels for the {images[0]} images of {image_file.name}; "
                    "expected one label per image"
                )
            high = int(np.frombuffer(label_file.read_bytes(), dtype=np.uint8, offset=8).max(initial=0))
            if high >= self.num_classes:
                raise UsageError(
                    f"{label_file}: a label is {high}; expected labels 0..{self.num_classes - 1} "
                    f"({self.name} has {self.num_classes} classes)"
                )
        return []

    def load_split(
        self, root: str | Path, split: str, val_fraction: float, seed: int, limit: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """One split of the search: `train` and `val` are carved from the training files (`holdout`), `test` is the
        test files (t10k), which the search never sees; the first `limit` if > 0."""
        if split not in SPLITS:
            raise ValueError(f"split={split}: one of {', '.join(SPLITS)}")
        images, labels = self.load(root, train=split != "test")
        if split != "test":
            train_index, val_index = holdout(labels, val_fraction, seed)
            pick = train_index if split == "train" else val_index
            images, labels = images[pick], labels[pick]
        if limit:
            images, labels = images[:limit], labels[:limit]
        return images, labels

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
    class_names=(
        "T-shirt/top",
        "Trouser",
        "Pullover",
        "Dress",
        "Coat",
        "Sandal",
        "Shirt",
        "Sneaker",
        "Bag",
        "Ankle boot",
    ),
    torchvision_class="FashionMNIST",
)

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff"}
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass
class FolderIndex:
    """The images of an ImageFolder tree: class names and (path, label) pairs per split."""

    class_names: tuple[str, ...]
    train: list[tuple[str, int]] = field(default_factory=list)
    val: list[tuple[str, int]] = field(default_factory=list)
    test: list[tuple[str, int]] = field(default_factory=list)


@dataclass(frozen=True)
class FolderDataset:
    """An ImageFolder tree of RGB images: `train/<class>/` and `val/<class>/` (Tiny ImageNet layout), or one
    `<class>/` tree split into train and val by the `train_pct` hyperparameter (Stanford Dogs tutorial)."""

    name: str
    split_by_pct: bool
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    in_channels: int = 3

    def info(self, root: str | Path, hp: dict) -> DataInfo:
        classes = self._class_names(Path(root).expanduser() / ("" if self.split_by_pct else "train"))
        return DataInfo(classes, self.in_channels, int(hp["image_size"]), self.mean, self.std)

    @staticmethod
    def _class_names(folder: Path) -> tuple[str, ...]:
        return tuple(sorted(p.name for p in folder.iterdir() if p.is_dir())) if folder.is_dir() else ()

    @staticmethod
    def _images(folder: Path) -> list[str]:
        return sorted(str(p) for p in folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())

    def index(self, root: str | Path, hp: dict, seed: int, skip=()) -> FolderIndex:
        root = Path(root).expanduser()
        skip = set(skip)
        if not self.split_by_pct:
            classes = self._class_names(root / "train")
            index = FolderIndex(classes)
            for split in ("train", "val", "test"):
                for label, name in enumerate(classes):
                    files = [f for f in self._images(root / split / name) if f not in skip]
                    getattr(index, split).extend((f, label) for f in files)
            return index
        classes = self._class_names(root)
        index = FolderIndex(classes)
        train_pct = float(hp.get("train_pct", 0.8))
        for label, name in enumerate(classes):
            files = [f for f in self._images(root / name) if f not in skip]
            random.Random(f"{seed}-{name}").shuffle(files)
            cut = max(1, min(len(files) - 1, round(train_pct * len(files))))
            index.train.extend((f, label) for f in files[:cut])
            index.val.extend((f, label) for f in files[cut:])
        return index

    def check(self, root: str | Path, hp: dict, download: bool, strict: bool, seed: int) -> list[str]:
        """Preflight: layout, classes and every image decodable. Returns unreadable images to skip."""
        base = Path(root).expanduser()
        splits = {"": base} if self.split_by_pct else {"train": base / "train", "val": base / "val"}
        for split, folder in splits.items():
            where = f"{split}/" if split else ""
            if not folder.is_dir():
                raise UsageError(f"data.root={root}: no {where or 'folder'} here; {self.layout_help()}")
            classes = self._class_names(folder)
            if len(classes) < 2:
                raise UsageError(
                    f"data.root={root}: {where or 'the tree'} has {len(classes)} class folder(s); "
                    f"a classifier needs at least 2 ({self.layout_help()})"
                )
            for name in classes:
                if not self._images(folder / name):
                    raise UsageError(f"data.root={root}: class folder {where}{name} holds no images")
        if not self.split_by_pct and self._class_names(base / "train") != self._class_names(base / "val"):
            raise UsageError(f"data.root={root}: train/ and val/ have different class folders")
        if self.has_test_split(base) and self._class_names(base / "test") != self._class_names(base / "train"):
            raise UsageError(f"data.root={root}: test/ has other class folders than train/ and val/")
        bad = unreadable_images(f for folder in splits.values() for f in self._images(folder))
        for split, folder in splits.items():
            for name in self._class_names(folder):
                images = self._images(folder / name)
                if set(images) <= set(bad):
                    where = f"{split}/{name}" if split else name
                    raise UsageError(
                        f"data.root={root}: class folder {where}: none of its {len(images)} images can be "
                        f"decoded (e.g. {images[0]}); expected at least one readable image per class"
                    )
        if bad and strict:
            raise UsageError(
                f"data.root={root}: {len(bad)} image(s) cannot be decoded, e.g. {bad[0]} (data.strict=true)"
            )
        if bad:
            print(
                f"data: skipping {len(bad)} image(s) that cannot be decoded: {', '.join(bad[:5])}"
                f"{' ...' if len(bad) > 5 else ''}",
                file=sys.stderr,
            )
        return bad

    def has_test_split(self, root: str | Path) -> bool:
        """A `test/` folder beside train/ and val/ (a tree split by train_pct has none)."""
        return not self.split_by_pct and (Path(root).expanduser() / "test").is_dir()

    def layout_help(self) -> str:
        if self.split_by_pct:
            return "expected <root>/<class>/<image> (split into train/val by train_pct)"
        return "expected <root>/train/<class>/<image> and <root>/val/<class>/<image>"


def unreadable_images(paths) -> list[str]:
    from PIL import Image

    bad = []
    for path in paths:
        try:
            with Image.open(path) as image:
                image.verify()
        except Exception:  # PIL raises many types for broken files; each one only means "skip this file"
            bad.append(str(path))
    return bad


IMAGEFOLDER = FolderDataset(name="imagefolder", split_by_pct=False)
IMAGEFOLDER_SPLIT = FolderDataset(name="imagefolder_split", split_by_pct=True)

DATASETS = {d.name: d for d in (MNIST, FASHION_MNIST, IMAGEFOLDER, IMAGEFOLDER_SPLIT)}

SPLITS = ("train", "val", "test")


def get_dataset(name: str) -> IdxDataset | FolderDataset:
    if name not in DATASETS:
        raise UsageError(f"dataset {name!r} is unknown; known datasets: {', '.join(DATASETS)}")
    return DATASETS[name]


def ensure_idx_dataset(dataset: IdxDataset, root: str, download: bool) -> None:
    """Make sure the dataset is under `root`, downloading it if allowed; else a UsageError naming what is missing."""
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
