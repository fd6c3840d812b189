"""The prize of fused trials: N models of one architecture stacked in one process and trained as one
(benchmarks/fused_group.py: each member its own lr, momentum, weight decay and dropout), against the same N members
trained as N separate processes sharing the device, as packed one-worker trials share a GPU. Images/s side by side,
measured in one run, the data on the device.

    python -m benchmarks.fused ROOT [--spaces cnn_mnist,mlp_mnist,resnet_mnist] [--members 1,4,8,16]
        [--batch 128] [--window-s 4] [--out results.json]         (ROOT: an MNIST folder, e.g. the shipped sample)

Each (space, N): the fused group, warmed up, trains for `--window-s` seconds in this process; then N of a pool of
worker processes (started once, each holding its data on the device) build the same members as a trial builds them
(`model_for`, `make_optimizer`, nn.Dropout), warm up, and train together for the same window from a common start.
Both sides count images trained per second (N x batch per fused step). The members' hyperparameters are drawn from
a fixed seed, the same on both sides; both train with plain SGD + momentum at a constant rate (no schedule), and a
fused group shares one batch size and batch order. Prints one line per (space, N) and rewrites the JSON after each,
`"complete": false` until the last.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import math
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from benchmarks import git_commit, portable
from benchmarks.fused_group import FusedGroup, product_model
from search.results.files import write_json_atomically
from trainables.data import MNIST
from trainables.feeds import MemoryFeed
from trainables.foundation.config import RunConfig
from trainables.training import make_optimizer

SHAPES = {  # the searched structure held fixed, so that members stack: the spaces' middle values
    "cnn_mnist": {"batch_size": 128},
    "mlp_mnist": {"hidden": 256, "layers": 2, "batch_size": 128},
    "resnet_mnist": {"batch_size": 128},
}
WARMUP_STEPS = 5


def member_hps(space: str, count: int, batch: int, seed: int = 0) -> list[dict]:
    """`count` members' hyperparameters: lr, momentum, weight decay and dropout drawn per member, the same for a
    given seed whatever the side (fused or packed)."""
    draw = random.Random(seed)
    members = []
    for _ in range(count):
        hp = {
            **SHAPES[space],
            "batch_size": batch,
            "optimizer": "sgd",
            "lr": 10 ** draw.uniform(-3, -1),
            "momentum": draw.uniform(0.5, 0.95),
            "weight_decay": 10 ** draw.uniform(-5, -3),
        }
        if space != "resnet_mnist":  # no dropout in the ResNet
            hp["dropout"] = draw.uniform(0.1, 0.5)
        members.append(hp)
    return members


def device_of(name: str) -> torch.device:
    return torch.device("cuda" if name == "auto" and torch.cuda.is_available() else ("cpu" if name == "auto" else name))


def endless_batches(root: str, batch: int, limit: int, device: torch.device):
    """The training digits held on the device, reshuffled each epoch, normalized per batch on the device (the
    product's memory feed)."""
    run = RunConfig.from_dict({**RunConfig().to_dict(), "data": {"root": root, "limit": limit}})
    feed = MemoryFeed(MNIST, run, {"batch_size": batch}, rank=0, world_size=1, device=device)
    return itertools.chain.from_iterable(feed.train_batches(epoch) for epoch in itertools.count(1))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_window(step, batches, device: torch.device, window_s: float, start_at: float | None = None) -> dict:
    """Steps for `window_s` seconds (from wall-clock `start_at` when given); images/s over the window, the device
    drained at both ends."""
    synchronize(device)
    if start_at is not None:
        time.sleep(max(0.0, start_at - time.time()))
    steps, images, started = 0, 0, time.perf_counter()
    while time.perf_counter() - started < window_s:
        images += step(*next(batches))
        steps += 1
    synchronize(device)
    seconds = time.perf_counter() - started
    return {"images_per_s": images / seconds, "steps": steps, "seconds": seconds}


def fused_rate(space: str, hps: list[dict], batches, device: torch.device, window_s: float) -> dict:
    models = []
    for index, hp in enumerate(hps):
        torch.manual_seed(index)
        models.append(product_model(space, hp))
    group = FusedGroup(models, hps, device)

    def step(images, labels):
        group.step(images, labels)
        return len(labels) * group.size

    for _ in range(WARMUP_STEPS):
        step(*next(batches))
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    rate = timed_window(step, batches, device, window_s)
    if device.type == "cuda":
        rate["peak_memory_mib"] = round(torch.cuda.max_memory_allocated(device) / 2**20)
    return rate


class Worker:
    """One packed process: trains one member at a time as a trial does, on command (JSON lines on stdin/stdout)."""

    def __init__(self, root: str, batch: int, limit: int, device: str):
        command = [sys.executable, "-m", "benchmarks.fused", "--worker", root, str(batch), str(limit), device]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def reply(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"a packed worker ended (exit {self.process.wait()}); its stderr is above")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def packed_rate(workers: list[Worker], space: str, hps: list[dict], window_s: float) -> dict:
    for index, (worker, hp) in enumerate(zip(workers, hps)):
        worker.send({"space": space, "hp": hp, "seed": index})
    for worker in workers[: len(hps)]:
        worker.reply()  # built and warmed up
    start_at = time.time() + 0.5
    for worker in workers[: len(hps)]:
        worker.send({"start_at": start_at, "window_s": window_s})
    rates = [worker.reply() for worker in workers[: len(hps)]]
    return {
        "images_per_s": sum(r["images_per_s"] for r in rates),
        "per_process": [round(r["images_per_s"]) for r in rates],
    }


def trial_step(space: str, hp: dict, seed: int, device: torch.device):
    """A step of one member trained alone, as a trial trains it: its model, the product's optimizer, nn.Dropout."""
    torch.manual_seed(seed)
    model = product_model(space, hp).to(device)
    optimizer = make_optimizer(hp, model)
    model.train()

    def step(images, labels):
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()
        return len(labels)

    return step


def serve(root: str, batch: int, limit: int, device_name: str) -> None:
    """A packed worker's loop: a member to build and warm up, then a window to train it in."""
    device = torch.device(device_name)
    torch.set_num_threads(1)
    batches = endless_batches(root, batch, limit, device)
    for line in sys.stdin:
        order = json.loads(line)
        step = trial_step(order["space"], order["hp"], order["seed"], device)
        for _ in range(WARMUP_STEPS):
            step(*next(batches))
        synchronize(device)
        print(json.dumps({"ready": True}), flush=True)
        go = json.loads(sys.stdin.readline())
        print(json.dumps(timed_window(step, batches, device, go["window_s"], go["start_at"])), flush=True)


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        memory = torch.cuda.get_device_properties(device).total_memory // 2**20
        return f"{torch.cuda.get_device_name(device)} ({memory:,} MiB), {os.cpu_count()} CPU cores"
    return f"CPU, {os.cpu_count()} cores ({platform.processor() or platform.machine()})"


def row_of(space: str, members: int, fused: dict, packed: dict) -> dict:
    ratio = fused["images_per_s"] / packed["images_per_s"] if packed.get("images_per_s") else math.nan
    return {"space": space, "members": members, "fused": fused, "packed": packed, "fused_over_packed": round(ratio, 3)}


def line_of(row: dict) -> str:
    fused, packed = row["fused"]["images_per_s"], row["packed"]["images_per_s"]
    return (
        f"{row['space']} N={row['members']}: fused {fused:,.0f} img/s, packed {packed:,.0f} img/s "
        f"({row['members']} processes), fused/packed {row['fused_over_packed']:.2f}x"
    )


def measure(args, device: torch.device, report: dict) -> None:
    sizes = [int(n) for n in args.members.split(",")]
    workers = [Worker(args.root, args.batch, args.limit, str(device)) for _ in range(max(sizes))]
    batches = endless_batches(args.root, args.batch, args.limit, device)
    try:
        for space in args.spaces.split(","):
            for members in sizes:
                hps = member_hps(space, members, args.batch)
                try:
                    fused = fused_rate(space, hps, batches, device, args.window_s)
                except torch.OutOfMemoryError as exc:
                    fused = {"images_per_s": 0.0, "failed": f"OutOfMemoryError: {str(exc).splitlines()[0]}"}
                    torch.cuda.empty_cache()
                packed = packed_rate(workers, space, hps, args.window_s)
                row = row_of(space, members, fused, packed)
                report["rows"].append(row)
                write_json_atomically(args.out, report)
                print(line_of(row), flush=True)
    finally:
        for worker in workers:
            worker.close()


def bad_option(args) -> str:
    """One line naming a bad option and what is allowed, or ""."""
    unknown = [space for space in args.spaces.split(",") if space not in SHAPES]
    if unknown:
        return f"--spaces {args.spaces}: {', '.join(unknown)} unknown; allowed: {', '.join(SHAPES)}"
    if not all(n.isdigit() and int(n) > 0 for n in args.members.split(",")):
        return f"--members {args.members}: positive integers, comma-separated"
    if not (Path(args.root) / "MNIST" / "raw").is_dir():
        return f"{args.root}: no MNIST/raw folder there (an MNIST root, e.g. the shipped sample's)"
    if args.batch < 1 or args.window_s <= 0:
        return f"--batch {args.batch} --window-s {args.window_s:g}: both must be > 0"
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", help="an MNIST folder (e.g. the shipped sample's, or $MNIST_MINI on the GPU machine)")
    parser.add_argument("--spaces", default="cnn_mnist,mlp_mnist")
    parser.add_argument("--members", default="1,4,8,16", help="group sizes N, comma-separated")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--window-s", type=float, default=4.0, help="seconds each side trains for its figure")
    parser.add_argument("--limit", type=int, default=0, help="training digits held (0: all)")
    parser.add_argument("--device", default="auto", help="auto (cuda when there is one), cpu or cuda")
    parser.add_argument("--out", type=Path, default=Path("fused.json"))
    args = parser.parse_args()
    refusal = bad_option(args)
    if refusal:
        print(refusal, file=sys.stderr)
        raise SystemExit(2)
    device = device_of(args.device)
    if device.type == "cpu":
        torch.set_num_threads(1)  # as each packed process has
    report = {
        "benchmark": "fused",
        "device": device_name(device),
        "date": datetime.date.today().isoformat(),
        "commit": git_commit(),
        "torch": torch.__version__,
        "command": " ".join(
            ["python -m benchmarks.fused", *(portable(a) if os.path.exists(a) else a for a in sys.argv[1:])]
        ),
        "batch": args.batch,
        "window_s": args.window_s,
        "rows": [],
        "complete": False,
    }
    measure(args, device, report)
    report["complete"] = True
    write_json_atomically(args.out, report)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        serve(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    else:
        main()
