"""Data path benchmark: this project's in-memory feed against the tutorials' torchvision Dataset + DataLoader with
per-sample ToTensor/Normalize, on the same MNIST files, batch size and model, in one process.

Part of `python -m benchmarks`: epoch times of both paths (data only, and a full ResNet-18 training epoch).
"""

from __future__ import annotations

import time

import torch

from benchmarks.throughput import TUTORIAL_MODEL
from trainables.data import MNIST
from trainables.feeds import MemoryFeed
from trainables.foundation.config import RunConfig
from trainables.foundation.space import load_space
from trainables.models import model_for
from trainables.training import make_optimizer, train_one_epoch


def tutorial_loader(root: str, batch: int):
    from torchvision import datasets, transforms

    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MNIST.mean, MNIST.std)])
    dataset = datasets.MNIST(root=root, train=True, download=False, transform=transform)
    return torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=0)


def memory_feed(root: str, batch: int):
    run = RunConfig.from_dict({**RunConfig().to_dict(), "data": {"root": root}})
    return MemoryFeed(MNIST, run, {"batch_size": batch}, rank=0, world_size=1, device=torch.device("cpu"))


def time_data_only(batches) -> float:
    start = time.perf_counter()
    for images, _labels in batches:
        images.sum()  # touch the batch
    return time.perf_counter() - start


def time_training_epoch(batches, seed: int = 0) -> float:
    torch.manual_seed(seed)
    space = load_space("resnet_mnist")
    model = model_for(space, TUTORIAL_MODEL, MNIST.info("", {}))
    optimizer = make_optimizer({"lr": 0.05, "momentum": 0.9}, model)
    return train_one_epoch(model, optimizer, batches, torch.device("cpu"))["seconds"]


def measure(root: str, batch: int) -> dict:
    """Both paths, one thread (as one training worker on a 2-core machine): data alone, then a training epoch."""
    torch.set_num_threads(1)
    feed = memory_feed(root, batch)
    loader = tutorial_loader(root, batch)
    figures = {
        "data_only_s": {"memory_feed": time_data_only(feed.train_batches(1)), "tutorial": time_data_only(loader)},
        "training_epoch_s": {
            "memory_feed": time_training_epoch(feed.train_batches(1)),
            "tutorial": time_training_epoch(loader),
        },
    }
    for figure in figures.values():
        figure["tutorial_over_memory_feed"] = figure["tutorial"] / figure["memory_feed"]
    return figures
