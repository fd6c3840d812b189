"""One configuration trained bare (no Ray), scored on the validation and test splits after every epoch: what a rung of
ASHA sees of it mid-schedule against what it ends at. Optionally also exponential moving averages of its weights.

    python -m benchmarks.epoch_curve ROOT '{"lr": 0.06, "shift": 3, "batch_size": 32}'
        [--epochs 8] [--ema 0.99,0.995] [--cycle-ends 3]

Prints one JSON line per epoch: {"epoch", "raw": [val_acc, test_acc], "<decay>": [val_acc, test_acc]..., "s"}. One
intra-op thread, as a trial of the default shape on 2 cores has. A research tool for benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import time

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from trainables.data import get_dataset
from trainables.feeds import MemoryFeed
from trainables.foundation.config import RunConfig
from trainables.foundation.space import load_space
from trainables.models import model_for
from trainables.training import LearningRate, StepOptions, evaluate, make_optimizer, train_one_epoch

CPU = torch.device("cpu")


def accuracy(model, batches, device: torch.device = CPU) -> float:
    stats = evaluate(model, batches, device)
    return round(stats["correct"].item() / stats["count"], 4)


def curve(
    root: str,
    hp: dict,
    epochs: int,
    decays: list[float],
    seed: int = 0,
    cycle_ends: tuple[int, ...] = (),
    space_name: str = "resnet_mnist",
    device: torch.device = CPU,
    limit: int = 0,
):
    """Yields one row per epoch (see the module's docstring); on `device` (the data held there too); `limit`: the
    first that many training digits (`data.limit`; 0: all). The data is the space's: MNIST's IDX files under
    `root`, or a space's own (`dataset="file.py:function"`, trainables.own_data), which may not need `root`."""
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    space = load_space(space_name)
    hp = {**space.constants, **hp}
    defaults = RunConfig().to_dict()
    run = RunConfig.from_dict(
        {
            **defaults,
            "space": space_name,
            "epochs": epochs,
            "seed": seed,
            "data": {**defaults["data"], "root": root, "limit": limit},
        }
    )
    dataset = get_dataset(space.dataset, run)
    feed = MemoryFeed(dataset, run, hp, rank=0, world_size=1, device=device)
    model = model_for(space, hp, dataset.info(root, hp)).to(device)
    optimizer = make_optimizer(hp, model)
    schedule = LearningRate(hp, optimizer, epochs, feed.steps_per_epoch(), cycle_ends=cycle_ends)
    averages = [AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(d), use_buffers=True) for d in decays]

    def after_step():
        schedule.after_step()
        for average in averages:
            average.update_parameters(model)

    options = StepOptions(label_smoothing=float(hp.get("label_smoothing", 0.0)))
    started = time.time()
    for epoch in range(1, epochs + 1):
        train_one_epoch(model, optimizer, feed.train_batches(epoch), device, options, after_step)
        score = functools.partial(accuracy, device=device)
        row = {"epoch": epoch, "raw": [score(model, feed.val_batches()), score(model, feed.test_batches())]}
        for decay, average in zip(decays, averages):
            row[str(decay)] = [
                score(average.module, feed.val_batches()),
                score(average.module, feed.test_batches()),
            ]
        row["s"] = round(time.time() - started, 2)
        yield row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", help="an MNIST folder with its test files (e.g. the shipped sample's)")
    parser.add_argument("hp", help="the trial's hyperparameters as JSON; the space's constants fill the rest")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--ema", default="", help="decays of weight averages to score too, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cycle-ends", default="", help="epochs where the schedule ends and starts again, e.g. 3")
    args = parser.parse_args()
    decays = [float(d) for d in args.ema.split(",") if d]
    ends = tuple(int(e) for e in args.cycle_ends.split(",") if e)
    for row in curve(args.root, json.loads(args.hp), args.epochs, decays, args.seed, ends):
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
