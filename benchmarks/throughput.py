"""Trial throughput and fixed overhead against a bare single-process PyTorch loop, in one script.

    python -m benchmarks.throughput [--root ../shared/datasets/mnist-mini] [--limit 2048] [--epochs 3] [--batch 128]

1. Bare loop: one process using every core, the same ResNet-18, data, batch size and device, steady-state images/s
   (epochs after the first).
2. Trials: `python -m search run` with one fixed configuration (nothing searched), for workers=1 and workers=2; the
   trial's own `images_per_s` (steady state: epochs after the first) and its fixed overhead (life from trial start to
   last report, minus the time spent in epochs).
Writes the figures to --out (JSON) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from benchmarks.report import write_report

REPO = Path(__file__).resolve().parents[1]


def bare_loop(root: str, limit: int, epochs: int, batch: int) -> float:
    from search.config import RunConfig
    from search.space import load_space
    from trainables.data import MNIST
    from trainables.feeds import MemoryFeed
    from trainables.training import make_optimizer, train_one_epoch

    torch.manual_seed(0)
    run = RunConfig.from_dict({**RunConfig().to_dict(), "data": {"root": root, "limit": limit}})
    feed = MemoryFeed(MNIST, run, {"batch_size": batch}, rank=0, world_size=1, device=torch.device("cpu"))
    model = load_space("resnet_mnist").build_model({}, MNIST.info(root, {}))
    optimizer = make_optimizer({"lr": 0.02, "momentum": 0.9}, model)
    rates = []
    for epoch in range(1, epochs + 1):
        stats = train_one_epoch(model, optimizer, feed.train_batches(epoch), torch.device("cpu"))
        rates.append(stats["count"] / stats["seconds"])
    return sum(rates[1:]) / len(rates[1:])


def trial(root: str, limit: int, epochs: int, batch: int, workers: int, storage: Path) -> dict:
    name = f"bench-w{workers}"
    command = [sys.executable, "-m", "search", "run", "space=resnet_mnist", f"data.root={root}", f"storage={storage}",
               f"name={name}", "trials=1", f"epochs={epochs}", f"grace={epochs}", f"workers={workers}",
               f"data.limit={limit}", "data.val_limit=500", f"batch_size={batch}", "lr=0.02", "momentum=0.9",
               "weight_decay=0.0001"]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    experiment = storage / name
    (entry,) = json.loads((experiment / "summary.json").read_text())["trials"]
    rows = [json.loads(line) for line in (experiment / f"trial_{entry['trial_id']}" / "result.json").read_text().splitlines()]
    steady = [r["images_per_s"] for r in rows[1:]]
    return {
        "images_per_s": sum(steady) / len(steady),
        "first_report_s": rows[0]["time_total_s"] - rows[0]["epoch_s"],  # trial start -> first epoch begins
        "overhead_s": entry["life_s"] - entry["training_s"],
        "life_s": entry["life_s"],
        "cli_wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(REPO.parent / "shared/datasets/mnist-mini"))
    parser.add_argument("--limit", type=int, default=2048)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--out", default="throughput.json")
    args = parser.parse_args()

    torch.set_num_threads(os.cpu_count() or 1)
    bare = bare_loop(args.root, args.limit, args.epochs, args.batch)
    with tempfile.TemporaryDirectory() as storage:
        trials = {w: trial(args.root, args.limit, args.epochs, args.batch, w, Path(storage)) for w in (1, 2)}
    write_report(args.out, {"batch": args.batch, "train_images": args.limit, "epochs": args.epochs,
                            "bare_loop_images_per_s": bare, "trials": {f"workers={w}": t for w, t in trials.items()}})
    print(f"bare single-process loop: {bare:.0f} images/s")
    print(f"{'trial':<11}{'images/s':>9}{'vs bare':>9}{'start->1st epoch':>18}{'overhead':>10}{'life':>8}{'CLI wall':>10}")
    for workers, t in trials.items():
        print(f"workers={workers:<3}{t['images_per_s']:>9.0f}{t['images_per_s'] / bare:>9.2f}"
              f"{t['first_report_s']:>17.1f}s{t['overhead_s']:>9.1f}s{t['life_s']:>7.1f}s{t['cli_wall_s']:>9.1f}s")  # fmt: skip


if __name__ == "__main__":
    main()
