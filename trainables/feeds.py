"""Batches for one rank: arrays straight from memory, image folders through DataLoader workers."""

from __future__ import annotations

import math

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from trainables.data import FolderDataset, IdxDataset, get_dataset
from trainables.foundation.repeats import training_seed
from trainables.training import Split, per_rank_batch_size, shard_indices

EVAL_BATCH = 512


def train_seed(seed: int, epoch: int) -> int:
    """The shuffle of an epoch: the same on every rank, so their shards stay disjoint."""
    return seed * 100_003 + epoch


_SPLITS: dict[tuple, Split] = {}  # a trial process Tune reuses keeps the last trial's data in memory


def cached_split(dataset: IdxDataset, run, split: str, limit: int, mean, std, device) -> Split:
    """The split decoded and on `device`, once per process (a reused process's next trial finds it there)."""
    root, fraction = str(run.data.root), run.data.val_fraction
    key = (dataset.name, root, split, fraction, run.seed, limit, tuple(mean), tuple(std), str(device))
    if key not in _SPLITS:
        for old in [k for k in _SPLITS if k[2] == split]:
            del _SPLITS[old]  # one split of each kind: another dataset, holdout or limit replaces it
        images, labels = dataset.load_split(root, split, fraction, run.seed, limit)
        _SPLITS[key] = Split.from_arrays(images, labels, mean, std, device)
    return _SPLITS[key]


class MemoryFeed:
    """A decoded uint8 split in (GPU) memory, sharded per rank; no per-sample transform."""

    def __init__(self, dataset: IdxDataset, run, hp: dict, rank: int, world_size: int, device, normalize: bool = True):
        self.rank, self.world_size, self.seed = rank, world_size, training_seed(run.seed, hp)  # batch order
        self.batch_size = per_rank_batch_size(hp["batch_size"], world_size)
        self.shift = int(hp.get("shift", 0))  # pixels of random translation, on the device, whole batches
        self.rotate = float(hp.get("rotate", 0.0))  # degrees of random rotation, the same way
        info = dataset.info(run.data.root, hp)  # a space's own dataset: known once its function has run
        mean, std = (info.mean, info.std) if normalize else ((0.0,) * info.in_channels, (1.0,) * info.in_channels)
        self.splits = {
            name: cached_split(dataset, run, name, limit, mean, std, device)
            for name, limit in (("train", run.data.limit), ("val", run.data.val_limit))
        }
        self.dataset, self.run, self.norm, self.device = dataset, run, (mean, std), device

    def train_batches(self, epoch: int):
        split = self.splits["train"]
        index = shard_indices(len(split), self.rank, self.world_size, seed=train_seed(self.seed, epoch))
        generator = None
        if self.shift or self.rotate:  # each rank and epoch its own draw, the same on a rerun
            generator = torch.Generator().manual_seed(train_seed(self.seed, epoch) * 1_000 + self.rank)
        return split.batches(index, self.batch_size, self.shift, generator, self.rotate)

    def steps_per_epoch(self) -> int:
        return math.ceil(len(self.splits["train"]) // self.world_size / self.batch_size)

    def val_batches(self, split: Split | None = None):
        split = self.splits["val"] if split is None else split
        return split.batches(shard_indices(len(split), self.rank, self.world_size, seed=None), EVAL_BATCH)

    def test_batches(self):
        """The test split (never seen by the search), this rank's shard; loaded on first use, not kept."""
        images, labels = self.dataset.load_split(self.run.data.root, "test", self.run.data.val_fraction, self.run.seed)
        return self.val_batches(Split.from_arrays(images, labels, *self.norm, self.device))


class FolderImages(Dataset):
    """(path, label) pairs decoded with PIL and transformed, in DataLoader worker processes."""

    def __init__(self, samples: list[tuple[str, int]], transform):
        self.samples, self.transform = samples, transform

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int):
        from PIL import Image

        path, label = self.samples[i]
        with Image.open(path) as image:
            return self.transform(image.convert("RGB")), label


class ShardSampler(Sampler):
    """This rank's share of a dataset, reshuffled each epoch (training) or in order (evaluation)."""

    def __init__(self, size: int, rank: int, world_size: int, seed: int | None):
        self.size, self.rank, self.world_size, self.seed = size, rank, world_size, seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self):
        seed = None if self.seed is None else train_seed(self.seed, self.epoch)
        return iter(shard_indices(self.size, self.rank, self.world_size, seed=seed).tolist())

    def __len__(self) -> int:
        if self.seed is None:
            return len(range(self.rank, self.size, self.world_size))
        return self.size // self.world_size


def folder_transforms(image_size: int, mean, std, train: bool, normalize: bool):
    from torchvision import transforms

    steps = (
        [transforms.RandomResizedCrop(image_size), transforms.RandomHorizontalFlip()]
        if train
        else [transforms.Resize(eval_resize(image_size)), transforms.CenterCrop(image_size)]
    )
    steps.append(transforms.ToTensor())
    if normalize:
        steps.append(transforms.Normalize(mean, std))
    return transforms.Compose(steps)


def eval_resize(image_size: int) -> int:
    """Shorter side before the center crop (224 -> 256, as in the torchvision recipes)."""
    return int(round(image_size / 0.875))


class FolderFeed:
    """An ImageFolder tree decoded by `data.workers` DataLoader processes, pinned memory on GPU."""

    def __init__(
        self, dataset: FolderDataset, run, hp: dict, rank: int, world_size: int, device, normalize=True, skip=()
    ):
        index = dataset.index(run.data.root, hp, run.seed, skip)
        train, val = index.train[: run.data.limit or None], index.val[: run.data.val_limit or None]  # 0: all
        size = int(hp["image_size"])
        pin = torch.device(device).type == "cuda"
        workers = run.data.workers

        def loader(samples, is_train, batch_size):
            sampler = ShardSampler(len(samples), rank, world_size, training_seed(run.seed, hp) if is_train else None)
            images = FolderImages(samples, folder_transforms(size, dataset.mean, dataset.std, is_train, normalize))
            return DataLoader(
                images, batch_size, sampler=sampler, num_workers=workers, pin_memory=pin, persistent_workers=workers > 0
            )

        self.train_loader = loader(train, True, per_rank_batch_size(hp["batch_size"], world_size))
        self.val_loader = loader(val, False, EVAL_BATCH)
        self.test_loader = loader(index.test, False, EVAL_BATCH) if index.test else None

    def train_batches(self, epoch: int):
        self.train_loader.sampler.set_epoch(epoch)
        return self.train_loader

    def steps_per_epoch(self) -> int:
        return len(self.train_loader)

    def val_batches(self):
        return self.val_loader

    def test_batches(self):
        return self.test_loader or []


def make_feed(space, run, hp: dict, rank: int, world_size: int, device, normalize: bool = True, skip=()):
    """This rank's batches of the space's data."""
    dataset = get_dataset(space.dataset, run)
    if isinstance(dataset, FolderDataset):
        return FolderFeed(dataset, run, hp, rank, world_size, device, normalize, skip)
    return MemoryFeed(dataset, run, hp, rank, world_size, device, normalize)
