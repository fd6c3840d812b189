"""Image-folder datasets: an ImageFolder tree of RGB images, found and checked without torch or Ray."""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

from trainables.data_info import DataInfo
from trainables.foundation.errors import UsageError

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
    """An ImageFolder tree: `train/<class>/` and `val/<class>/`, or one `<class>/` tree split by `train_pct`."""

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
        from PIL import Image

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
        bad = []
        for path in (f for folder in splits.values() for f in self._images(folder)):
            try:
                with Image.open(path) as image:
                    image.verify()
            except Exception:  # PIL raises many types for broken files; each one only means "skip this file"
                bad.append(str(path))
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


IMAGEFOLDER = FolderDataset(name="imagefolder", split_by_pct=False)
IMAGEFOLDER_SPLIT = FolderDataset(name="imagefolder_split", split_by_pct=True)
