"""A learning-curve table of a space: every configuration of an ordinal grid over its hyperparameters, trained bare
(no Ray) with each seed, scored on the validation and test splits after every epoch, with the seconds it took: the
data the replays run on without training.

    python -m benchmarks.curve_table ROOT --space mlp_mnist --epochs 3 --seeds 0,1 --jobs 2 \\
        --out benchmarks/results/tables/mlp_mnist.jsonl.gz

Rows are appended to OUT's `.partial` file (first line: the build's settings) as they end, so a stopped build resumes
with the same settings; the finished table is OUT, compressed, header first (`"held_out": true` for spaces/heldout/)."""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import itertools
import json
import math
import multiprocessing
import os
import random
import sys
from pathlib import Path

from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from benchmarks import portable
from benchmarks.options import OneLineParser

LOG_POINTS, LINEAR_POINTS = 8, 4  # values of a float hyperparameter on a log scale, on a linear one
HELD_OUT = Path(__file__).resolve().parents[1] / "spaces" / "heldout"  # the held-out workloads' spaces


def held_out(space_ref: str) -> bool:
    """Whether `space=` names a space in spaces/heldout/ (by path or dotted module)."""
    if space_ref.endswith(".py") or "/" in space_ref:
        path = Path(space_ref)
    else:
        spec = None
        with contextlib.suppress(ImportError):
            spec = importlib.util.find_spec(space_ref) if "." in space_ref else None
        if spec is None or not spec.origin:
            return False
        path = Path(spec.origin)
    return HELD_OUT in path.resolve().parents


def grid_values(distribution, log_points: int = LOG_POINTS, linear_points: int = LINEAR_POINTS) -> list:
    """A hyperparameter's grid values: every choice, at most `log_points` integers, or evenly spread floats."""
    if isinstance(distribution, CategoricalDistribution):
        return list(distribution.choices)
    if isinstance(distribution, IntDistribution):
        values = list(range(distribution.low, distribution.high + 1, distribution.step))
        if len(values) <= log_points:
            return values
        return sorted({values[round(i * (len(values) - 1) / (log_points - 1))] for i in range(log_points)})
    if isinstance(distribution, FloatDistribution):
        low, high = distribution.low, distribution.high
        if distribution.log:
            lo, hi = math.log(low), math.log(high)
            points = [math.exp(lo + i * (hi - lo) / (log_points - 1)) for i in range(log_points)]
        else:
            points = [low + i * (high - low) / (linear_points - 1) for i in range(linear_points)]
        return [float(f"{p:.4g}") for p in points]
    raise TypeError(f"no grid for {type(distribution).__name__}")


def grid_of(
    hyperparameters: dict, log_points: int = LOG_POINTS, linear_points: int = LINEAR_POINTS, points: dict | None = None
) -> dict:
    """The grid of every hyperparameter; `points` gives some of them their own count of values."""
    points = points or {}
    return {
        name: grid_values(distribution, points.get(name, log_points), points.get(name, linear_points))
        for name, distribution in sorted(hyperparameters.items())
    }


def configurations(grid: dict[str, list]) -> list[dict]:
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


def key_of(config: dict, seed: int) -> str:
    return json.dumps([config, seed], sort_keys=True)


def parse_fixed(pair: str) -> tuple[str, object]:
    name, _, text = pair.partition("=")
    try:
        return name, json.loads(text)
    except json.JSONDecodeError:
        return name, text


def rows_done(partial: Path) -> dict[str, dict]:
    """The rows a stopped build wrote, its settings line under the key ""; a line cut short by the stop is skipped."""
    done = {}
    if partial.exists():
        for line in partial.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):  # a line cut short by the stop
                row = json.loads(line)
                done["" if "settings" in row else key_of(row["config"], row["seed"])] = row
    return done


def table_rows(partial: Path, grid: dict, seeds: list[int]) -> list[dict]:
    """The rows of the grid's configurations and seeds, in key order (a coarser grid reuses a finer one's rows)."""
    wanted = {key_of(config, seed) for config in configurations(grid) for seed in seeds}
    kept = (row for key, row in rows_done(partial).items() if key in wanted)
    return sorted(kept, key=lambda row: key_of(row["config"], row["seed"]))


def train_row(job: tuple) -> dict:
    """One configuration and seed trained bare, one intra-op thread: each epoch's val and test accuracy and seconds."""
    root, space_name, config, seed, epochs, device, fixed, data_options = job  # data_options: limit, val_fraction
    import time

    import torch

    from trainables.data import get_dataset
    from trainables.feeds import MemoryFeed
    from trainables.foundation.config import RunConfig
    from trainables.foundation.space import load_space
    from trainables.models import model_for
    from trainables.training import LearningRate, StepOptions, evaluate, make_optimizer, train_one_epoch

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    device, space = torch.device(device), load_space(space_name)
    hp = {**space.constants, **fixed, **config}
    defaults = RunConfig().to_dict()
    data = {**defaults["data"], "root": root, **data_options}
    run = RunConfig.from_dict({**defaults, "space": space_name, "epochs": epochs, "seed": seed, "data": data})
    dataset = get_dataset(space.dataset, run)
    feed = MemoryFeed(dataset, run, hp, rank=0, world_size=1, device=device)
    model = model_for(space, hp, dataset.info(root, hp)).to(device)
    optimizer = make_optimizer(hp, model)
    schedule = LearningRate(hp, optimizer, epochs, feed.steps_per_epoch())
    options = StepOptions(label_smoothing=float(hp.get("label_smoothing", 0.0)))

    def accuracy(batches) -> float:
        stats = evaluate(model, batches, device)
        return round(stats["correct"].item() / stats["count"], 4)

    row, started = {"config": config, "seed": seed, "val": [], "test": [], "s": []}, time.time()
    for epoch in range(1, epochs + 1):
        train_one_epoch(model, optimizer, feed.train_batches(epoch), device, options, schedule.after_step)
        row["val"].append(accuracy(feed.val_batches()))
        row["test"].append(accuracy(feed.test_batches()))
        row["s"].append(round(time.time() - started, 2))
    return row


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("root", nargs="?", default="", help="an MNIST folder with its test files (a space with its own data: optional)")
    add("--space", default="mlp_mnist")
    add("--epochs", type=int, default=3)
    add("--seeds", default="0,1")
    add("--jobs", type=int, default=2)
    add("--out", type=Path, required=True)
    add("--device", default="cpu", help="cpu, or cuda: every job trains on the GPU, which they share")
    add("--log-points", type=int, default=LOG_POINTS, help="values of a log-scaled float or an int")
    add("--linear-points", type=int, default=LINEAR_POINTS, help="values of a linear float")
    add("--fixed", default="", help="constants every row trains with, e.g. lr_schedule=cosine (JSON values or text)")
    add("--points", default="", help="per hyperparameter, its count of values, e.g. lr=4,shift=2")
    add("--limit", type=int, default=0, help="train on the first LIMIT training digits (0: all)")
    add("--val-fraction", type=float, help="the share of training images held out to validate (default: the run's)")
    args = parser.parse_args()
    from trainables.data import get_dataset
    from trainables.foundation.config import RunConfig
    from trainables.foundation.space import load_space

    seeds = [int(s) for s in args.seeds.split(",")]
    points = {name: int(count) for name, count in (pair.split("=") for pair in args.points.split(",") if pair)}
    space = load_space(args.space)
    if not args.root and ":" not in space.dataset:
        parser.error(f"root: {args.space}'s data is {space.dataset}: give the folder that holds it")
    if args.val_fraction is not None and not 0 < args.val_fraction < 1:
        parser.error(f"--val-fraction={args.val_fraction:g}: the share of training images to validate on, in (0, 1)")
    own = get_dataset(space.dataset).loaded(args.root, 0).splits if ":" in space.dataset and args.val_fraction else {}
    if "val" in own:  # a space's own data that gives its validation split: nothing is carved from `train`
        parser.error(f"--val-fraction: {args.space}'s data gives its own validation split, so none is carved")
    grid = grid_of(space.hyperparameters, args.log_points, args.linear_points, points)
    fixed = dict(parse_fixed(pair) for pair in args.fixed.split(",") if pair)
    partial = args.out.with_name(args.out.name + ".partial")
    partial.parent.mkdir(parents=True, exist_ok=True)
    data = {"limit": args.limit, "val_fraction": args.val_fraction or RunConfig().data.val_fraction}  # 0: refused
    settings = [args.space, portable(args.root) if args.root else "", args.epochs, args.device, fixed, data]
    done = rows_done(partial)  # a stopped build's rows (under "": its settings), resumed only with the same settings
    if done.pop("", {}).get("settings") != settings and done:  # two builds' rows, or rows saying none, never mix
        parser.error(f"--out: {partial.name}'s first line says its rows' settings, not {json.dumps(settings)}")
    if not done:  # the file starts again, its settings first
        partial.write_text(json.dumps({"settings": settings}) + "\n")
    todo = [(config, seed) for config in configurations(grid) for seed in seeds if key_of(config, seed) not in done]
    jobs = [(args.root, args.space, config, seed, args.epochs, args.device, fixed, data) for config, seed in todo]
    random.Random(0).shuffle(jobs)  # a build stopped part way holds an even sample of the grid
    print(f"{len(done)} rows done, {len(jobs)} to train", flush=True)
    # spawn, never fork: CUDA cannot fork, and a fork of a process with threads (a test runner's, torch's) can leave
    # a pool worker waiting forever on a lock another thread held at the fork (seen once: the suite hung there)
    with open(partial, "a") as stream, multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        for number, row in enumerate(pool.imap_unordered(train_row, jobs), start=1):
            stream.write(json.dumps(row) + "\n")
            stream.flush()
            if number % 50 == 0:
                print(f"{len(done) + number} rows", flush=True)
    rows = table_rows(partial, grid, seeds)
    command = ["python -m benchmarks.curve_table", *(portable(a) if os.path.exists(a) else a for a in sys.argv[1:])]
    header = {"space": args.space, "epochs": args.epochs, "seeds": seeds, "grid": grid, "command": " ".join(command)}
    if held_out(args.space):
        header["held_out"], header["workload"] = True, space.name  # no default may be chosen on it (replay.py)
    extra = dict(device="" if args.device == "cpu" else args.device, limit=args.limit, fixed=fixed)
    extra["val_fraction"] = args.val_fraction  # the held-out share of the training images, when given
    header.update((key, value) for key, value in extra.items() if value)  # fixed: the replays add it to the constants
    staging = args.out.with_name(args.out.name + ".writing")
    with gzip.open(staging, "wt") as stream:
        stream.write(json.dumps(header) + "\n")
        stream.writelines(json.dumps(row) + "\n" for row in rows)
    os.replace(staging, args.out)
    partial.unlink()
    print(f"{len(rows)} rows in {args.out}")


if __name__ == "__main__":
    main()
