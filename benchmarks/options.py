"""The benchmark's command line: every option checked before anything is measured, so a typo costs a second, not an
hour of measuring (imports neither torch nor Ray)."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

DEFAULT_ROOT = ""  # the package's MNIST sample (search.samples), unpacked when a part runs
PARTS = ("peer", "warm", "overhead", "ddp", "data", "asha", "memory", "gpu", "scale", "replay")
DEFAULT_PARTS = PARTS[:-2]  # scale takes hours on 2 cores; replay measures the method, not this machine
REPLAY_TABLE = str(Path(__file__).parent / "results" / "tables" / "mlp_mnist-3ep-4seeds.jsonl.gz")
SHAPES = {
    "workers=1 cpus=2": ("workers=1", "cpus=2"),  # trains in its own trial process, reused for the next trial
    "workers=1 cpus=2 in_process=false": ("workers=1", "cpus=2", "in_process=false"),  # a Train worker group (before)
    "workers=2 cpus=1": ("workers=2", "cpus=1"),
}
# option -> the smallest value that measures something (the memory part compares trial 2 with the last trial).
SMALLEST = dict.fromkeys(("peer_trials", "peer_epochs", "trials_per_shape", "trial_epochs", "gpu_images"), 1)
SMALLEST.update(trial_images=2, memory_trials=3, asha_trials=2, asha_epochs=2, asha_images=0, replay_seeds=2)
SMALLEST.update(replay_checks=0, replay_first_seed=0, replay_epoch_budget=0)
DEVICE = re.compile(r"cpu|cuda(:\d+)?")


class OneLineParser(argparse.ArgumentParser):
    """argparse's own refusals (a value of the wrong type, an unknown option) as one line, exit 2."""

    def error(self, message: str):
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


OPTIONS = (  # option, type, default, help (after --root, --out and --only)
    ("--shapes", str, ",".join(SHAPES), f"trial shapes of the overhead part, of: {', '.join(SHAPES)}"),
    ("--peer-trials", int, 8, "peer part: trials of the loop and of the search"),
    ("--peer-epochs", int, 2, "peer part: epochs per trial"),
    ("--peer-keys", str, "", "peer part: key=value words added to the search's command (e.g. gpus=0.125), spaced"),
    ("--trials-per-shape", int, 3, "overhead part: trials one after another"),
    ("--trial-images", int, 2048, "overhead part: training images per trial"),
    ("--trial-epochs", int, 5, "overhead part: epochs (the first two are warm-up)"),
    ("--memory-trials", int, 20, "memory part: trials of the search it samples"),
    ("--reduction", float, 3.0, "ASHA reduction factor of the ASHA part"),
    ("--asha-trials", int, 10, "more than 10: random sampler"),
    ("--asha-epochs", int, 8, "ASHA part: epochs of a trial run to the end"),
    ("--asha-images", int, 1024, "ASHA part: training images (0: all)"),
    ("--asha-space", str, "resnet_mnist", "ASHA part: the space searched"),
    ("--device", str, "cuda", "device of the gpu part (cpu: a smoke run of its code)"),
    ("--gpu-images", int, 6000, "training images of the gpu part"),
    ("--scale-trials", str, "500,2000", "scale part: comma-separated trial counts (10000: the cluster's)"),
    ("--scale-mlflow", str, "on,off", "scale part: tracking=mlflow on, off or both"),
    ("--scale-keep", str, "", "scale part: a folder to keep its experiments in"),
    ("--scale-again", str, "", "scale part: `resume` timed again on copies of a --scale-keep folder's experiments"),
    ("--replay-table", str, REPLAY_TABLE, "replay part: a learning-curve table"),
    ("--replay-seeds", int, 300, "replay part: seeds per arm"),
    ("--replay-first-seed", int, 0, "replay part: the first seed (another set: e.g. 10000)"),
    ("--replay-epoch-budget", int, 0, "replay part: the stop rule, an epoch budget (0: the product's trial count)"),
    ("--replay-checks", int, 4, "replay part: real searches through Ray it is checked against"),
)


def build_parser(description: str) -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m benchmarks", description=description)
    parser.add_argument(
        "--root",
        default=DEFAULT_ROOT,
        help="MNIST in torchvision's layout (a folder holding MNIST/raw; "
        "default: the 8,000-digit sample that ships with search)",
    )
    parser.add_argument("--out", default="benchmarks.json", help="JSON file of the figures (written as each part ends)")
    parser.add_argument(
        "--only",
        default=",".join(DEFAULT_PARTS),
        help=f"comma-separated parts of: {', '.join(PARTS)} (default: all but scale, hours long, and replay)",
    )
    for option, kind, default, text in OPTIONS:
        parser.add_argument(option, type=kind, default=default, help=text)
    return parser


def parse_args(argv: list[str] | None, description: str) -> tuple[argparse.Namespace, set[str], list[str]]:
    """The options, the parts to run and the trial shapes; a bad option: one line on stderr, exit 2."""
    parser = build_parser(description)
    args = parser.parse_args(argv)
    if not args.root:
        from search import samples

        args.root = str(samples.mnist_root())
    if problem := first_problem(args):
        parser.error(problem)
    return args, set(names(args.only)), names(args.shapes)


def names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def first_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the options, in their command-line terms (None: nothing)."""
    parts, shapes = names(args.only), names(args.shapes)
    if not parts or set(parts) - set(PARTS):
        return f"--only={args.only}: allowed parts are {', '.join(PARTS)}"
    if not shapes or set(shapes) - set(SHAPES):
        return f"--shapes={args.shapes}: allowed shapes are {', '.join(SHAPES)}"
    for key, smallest in SMALLEST.items():
        if getattr(args, key) < smallest:
            return f"--{key.replace('_', '-')}={getattr(args, key)}: must be >= {smallest}"
    if not args.reduction > 1:
        return f"--reduction={args.reduction:g}: must be > 1"
    if not all(n.isdigit() and int(n) >= 20 for n in names(args.scale_trials)) or not names(args.scale_trials):
        return f"--scale-trials={args.scale_trials}: allowed are trial counts >= 20, comma-separated"
    if not names(args.scale_mlflow) or set(names(args.scale_mlflow)) - {"on", "off"}:
        return f"--scale-mlflow={args.scale_mlflow}: allowed are on, off, or on,off"
    if args.scale_keep and (Path(args.scale_keep).exists() or not Path(args.scale_keep).parent.is_dir()):
        return f"--scale-keep={args.scale_keep}: must be a new folder in an existing one"
    if args.scale_again and not any(Path(args.scale_again).glob("scale-*/study.log")):
        return f"--scale-again={args.scale_again}: must be a --scale-keep folder holding its experiments"
    if not DEVICE.fullmatch(args.device):
        return f"--device={args.device}: allowed devices are cpu, cuda, cuda:N"
    if not (Path(args.root) / "MNIST" / "raw").is_dir():
        return f"--root={args.root}: no MNIST/raw folder there (torchvision's MNIST layout)"
    if "replay" in parts and not Path(args.replay_table).is_file():
        return f"--replay-table={args.replay_table}: no such file (benchmarks/curve_table.py builds one)"
    if Path(args.out).is_dir() or not Path(args.out).parent.is_dir():
        return f"--out={args.out}: must be a file in an existing folder"
    return None
