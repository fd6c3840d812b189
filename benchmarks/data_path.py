"""Data path benchmark: this project's in-memory feed against the tutorials' torchvision Dataset + DataLoader with
per-sample ToTensor/Normalize, on the same MNIST files, batch size and model, in one process (part `data`)."""

from __future__ import annotations

import time

import torch

from benchmarks.throughput import SGD, memory_feed, tutorial_loader, tutorial_model
from trainables.training import make_optimizer, train_one_epoch


def time_data_only(batches) -> float:
    start = time.perf_counter()
    for images, _labels in batches:
        images.sum()  # touch the batch
    return time.perf_counter() - start


def time_training_epoch(batches) -> float:
    model = tutorial_model()
    return train_one_epoch(model, make_optimizer({**SGD, "lr": 0.05}, model), batches, torch.device("cpu"))["seconds"]


def measure(root: str, batch: int) -> dict:
    """Both paths, one thread (as one training worker on a 2-core machine): data alone, then a training epoch."""
    torch.set_num_threads(1)
    feed, loader, figures = memory_feed(root, batch), tutorial_loader(root, batch), {}
    for key, timed in (("data_only_s", time_data_only), ("training_epoch_s", time_training_epoch)):
        figures[key] = {"memory_feed": timed(feed.train_batches(1)), "tutorial": timed(loader)}
        figures[key]["tutorial_over_memory_feed"] = figures[key]["tutorial"] / figures[key]["memory_feed"]
    return figures
