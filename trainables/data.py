"""The built-in datasets, checked without torch or Ray, so a bad `data.root` is refused before anything heavy."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainables.data_info import DataInfo
from trainables.foundation.errors import UsageError
from trainables.idx_files import SPLITS, carved, idx_header, read_idx
from trainables.image_folders import IMAGEFOLDER, IMAGEFOLDER_SPLIT, FolderDataset


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
        """torchvision's download into a temporary folder, moved into place once whole: a failure leaves nothing."""
        import contextlib
        import io
        import shutil
        import tempfile

        import torchvision.datasets

        from trainables.foundation.fetching import make_folders, put_in_place, staging_beside

        dataset_class = getattr(torchvision.datasets, self.torchvision_class)
        with tempfile.TemporaryDirectory(prefix=f"search-{self.name}-download-") as partial:
            with contextlib.redirect_stdout(io.StringIO()):  # torchvision's words name the temporary folder
                for train in (True, False):
                    dataset_class(root=partial, train=train, download=True)
            raw = make_folders(self.raw_dir(root))
            for fetched in sorted(self.raw_dir(partial).iterdir()):
                if not (raw / fetched.name).exists():  # through a name of its own: a reader never sees half a file
                    with staging_beside(raw / fetched.name) as staging:
                        shutil.move(fetched, staging / fetched.name)
                        put_in_place(staging / fetched.name, raw / fetched.name)  # recorded: a refusal takes it back

    def info(self, root: str | Path, hp: dict) -> DataInfo:
        return DataInfo(self.class_names, self.in_channels, self.image_size, self.mean, self.std)

    def has_test_split(self, root: str | Path) -> bool:
        return True  # the t10k files, checked before the search

    def check(self, root: str | Path, hp: dict, download: bool, strict: bool, seed: int) -> list[str]:
        """Preflight: the files are there (downloaded if allowed) and whole. Returns files to skip (none)."""
        from trainables.foundation.fetching import hold

        ensure_idx_dataset(self, str(root), download)
        for train in (True, False):
            for file in self.split_files(root, train):
                hold(file)  # read by this search: another process's refusal keeps the download it made
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
        """One split: `train` and `val` carved from the training files (`carved`), `test` from the t10k files."""
        if split not in SPLITS:
            raise ValueError(f"split={split}: one of {', '.join(SPLITS)}")
        images, labels = self.load(root, train=split != "test")
        return carved(images, labels, split, val_fraction, seed, limit)

    def load(self, root: str | Path, train: bool, limit: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(images uint8 [N, C, H, W], labels int64 [N]) of one split, the first `limit` if > 0."""
        image_file, label_file = self.split_files(root, train)
        images = read_idx(image_file)
        labels = read_idx(label_file).astype(np.int64)
        if len(images) != len(labels):
            raise ValueError(f"{image_file} has {len(images)} images but {label_file} has {len(labels)} labels")
        return images[: limit or None, None, :, :], labels[: limit or None]  # limit 0: all


MNIST = IdxDataset(
    "mnist", "MNIST", mean=(0.1307,), std=(0.3081,), class_names=tuple("0123456789"), torchvision_class="MNIST"
)
FASHION_MNIST = IdxDataset(
    "fashion_mnist",
    "FashionMNIST",
    mean=(0.5,),
    std=(0.5,),
    class_names=tuple("T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot".split(",")),
    torchvision_class="FashionMNIST",
)
DATASETS = {d.name: d for d in (MNIST, FASHION_MNIST, IMAGEFOLDER, IMAGEFOLDER_SPLIT)}


def get_dataset(name: str, run=None) -> IdxDataset | FolderDataset:
    """A built-in dataset by name, or a space's own ("file.py:function"; `run`: the RunConfig, see own_data)."""
    if ":" in name:
        from trainables.own_data import OwnDataset

        return OwnDataset(name, run)
    if name not in DATASETS:
        raise UsageError(
            f"dataset {name!r} is unknown; known datasets: {', '.join(DATASETS)} (or 'path/to/file.py:function')"
        )
    return DATASETS[name]


def ensure_idx_dataset(dataset: IdxDataset, root: str, download: bool) -> None:
    """Make sure the dataset is under `root`, downloading it if allowed; else a UsageError naming what is missing."""
    missing = dataset.missing_files(root)
    if not missing:
        return
    reason, remedy = "data.download=false", "or set data.download=true to download them (online)"
    if download:
        try:
            dataset.download(root)
        except Exception as exc:  # offline, a mirror failed, or no room for the files: never train on nothing
            reason = download_failure(exc)
            remedy = "or run where torchvision's mirrors answer"
        missing = dataset.missing_files(root)
        if not missing:
            return
    names = ", ".join(str(p.relative_to(Path(root).expanduser())) for p in missing)
    raise UsageError(
        f"data.root={root}: {dataset.name} is missing {names} ({reason}); put torchvision's "
        f"{dataset.torchvision_class} files there, {remedy}"
    )


def download_failure(exc: Exception) -> str:
    """Why a download failed, in a few words (torchvision's offline error holds every mirror's traceback)."""
    if isinstance(exc, OSError) and exc.strerror:  # the disk: no space, no permission
        return f"the download failed: {exc.strerror}"
    if isinstance(exc, (RuntimeError, OSError)):
        return "not downloaded: offline, or torchvision's mirrors did not answer"
    return f"the download failed ({type(exc).__name__})"
