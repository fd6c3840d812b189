"""Steady-state trial throughput against a bare single-process PyTorch loop on the same model, data and batch, and
the pieces the machine benchmarks share: the in-memory feed, the tutorials' DataLoader and their model."""

from __future__ import annotations

import torch

from trainables.data import MNIST
from trainables.feeds import MemoryFeed
from trainables.foundation.config import RunConfig
from trainables.foundation.space import load_space
from trainables.models import model_for
from trainables.training import make_optimizer, train_one_epoch

# The Ray Train tutorial's ResNet-18 (7x7 stride-2 stem), which every benchmark has measured.
TUTORIAL_MODEL = {"stem": "imagenet"}
SGD = {"lr": 0.02, "momentum": 0.9}


def tutorial_model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return model_for(load_space("resnet_mnist"), TUTORIAL_MODEL, MNIST.info("", {}))


def memory_feed(root: str, batch: int, limit: int = 0, device="cpu", rank: int = 0, world_size: int = 1) -> MemoryFeed:
    """This project's feed: uint8 images held on `device`, normalized per batch there."""
    run = RunConfig.from_dict({**RunConfig().to_dict(), "data": {"root": root, "limit": limit}})
    return MemoryFeed(MNIST, run, {"batch_size": batch}, rank=rank, world_size=world_size, device=torch.device(device))


def tutorial_loader(root: str, batch: int, limit: int = 0, workers: int = 0, pin: bool = False):
    """The tutorials' path: torchvision's MNIST with per-sample ToTensor/Normalize through a DataLoader."""
    from torchvision import datasets, transforms

    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MNIST.mean, MNIST.std)])
    dataset = datasets.MNIST(root=root, train=True, download=False, transform=transform)
    if limit:
        dataset = torch.utils.data.Subset(dataset, range(min(limit, len(dataset))))
    return torch.utils.data.DataLoader(
        dataset, batch_size=batch, shuffle=True, num_workers=workers, pin_memory=pin, persistent_workers=workers > 0
    )


def bare_loop(root: str, limit: int, epochs: int, batch: int, threads: int, rank=0, world_size=1, wrap=None) -> float:
    """Images/s of a plain loop on the in-memory feed after two warm-up epochs; `rank`'s batch share, `wrap`: DDP."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    feed = memory_feed(root, batch, limit, rank=rank, world_size=world_size)
    model = wrap(tutorial_model()) if wrap else tutorial_model()
    optimizer, cpu = make_optimizer(SGD, model), torch.device("cpu")
    epoch_stats = [train_one_epoch(model, optimizer, feed.train_batches(e), cpu) for e in range(1, epochs + 1)]
    rates = [stats["count"] / stats["seconds"] for stats in epoch_stats]
    return sum(rates[2:]) / len(rates[2:])


def steady_rows(rows: list[dict]) -> list[dict]:
    """A trial's epochs after the first two (they pay for warm-up); its last epoch if it ran no more."""
    return rows[2:] or rows[-1:]


def steady_images_per_s(rows: list[dict]) -> float:
    steady = [row["images_per_s"] for row in steady_rows(rows)]
    return sum(steady) / len(steady)
