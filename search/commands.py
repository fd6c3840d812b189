"""The CLI's subcommands. Each takes the words after its name and returns an exit code."""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

from search.config import RunConfig, experiment_dir, format_help, help_rows, parse_overrides, split_override
from search.errors import UsageError
from search.resources import TrialShape, local_cpu_count, plan_concurrency
from search.space import Space, builtin_space_names, coerce_hyperparameter, describe_distribution, load_space
from search.summary import format_table

RUN_USAGE = "usage: python -m search run space=NAME [key=value ...]"


def cmd_run(args: list[str]) -> int:
    if any(a in ("-h", "--help") for a in args):
        print(RUN_USAGE + "\n\nkeys (key=default):\n" + format_help(help_rows()))
        print("\nA hyperparameter of the space given as key=value is fixed and removed from the search;")
        print("`python -m search spaces` lists them.")
        return 0
    config, space = parse_run(args)
    preflight(config, space)
    from search.tuner import run_search  # Ray is imported only once the input is known to be good

    summary = run_search(config, space, experiment_dir(config))
    print()
    print(format_table(summary))
    best = summary["best"]
    print(f"\nbest: trial {best['trial_id']} epoch {best['epoch']} {summary['metric']}={best['metrics'][summary['metric']]:.4f}")
    print(f"best checkpoint: {best['checkpoint']}")
    print(f"summary: {experiment_dir(config) / 'summary.json'}")
    return 0


def parse_run(args: list[str]) -> tuple[RunConfig, Space]:
    """Parse `run` arguments into a complete RunConfig (space resolved, paths absolute, name set)."""
    space_refs = [value for key, value in map(split_override, args) if key == "space"]
    if not space_refs:
        raise UsageError(f"space= is required; known spaces: {', '.join(builtin_space_names())}")
    space = load_space(space_refs[-1])
    parsers = {name: functools.partial(coerce_hyperparameter, space, name) for name in space.hyperparameter_names()}
    config = parse_overrides(args, parsers)
    if os.path.exists(config.space):
        config.space = str(Path(config.space).resolve())
    config.name = config.name or f"{space.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    config.data.root = str(Path(config.data.root).expanduser().resolve())
    config.storage = str(Path(config.storage).expanduser().resolve())
    return config, space


def preflight(config: RunConfig, space: Space) -> None:
    """Everything that can be refused before Ray starts."""
    from trainables.data import ensure_dataset
    from trainables.training import OPTIMIZER_NAMES

    optimizer = {**space.constants, **config.fixed}.get("optimizer")
    if optimizer is not None and optimizer not in OPTIMIZER_NAMES:
        raise UsageError(f"optimizer={optimizer}: allowed values are {', '.join(OPTIMIZER_NAMES)}")
    if experiment_dir(config).exists():
        raise UsageError(f"name={config.name}: {experiment_dir(config)} already exists; choose another name=")
    if config.gpus is None:
        config.gpus = 1.0 if local_gpu_count() else 0.0
    if not config.address:
        local_node = {"CPU": local_cpu_count(), "GPU": local_gpu_count()}
        plan_concurrency([local_node], TrialShape.of(config), config.concurrency)
    ensure_dataset(space.dataset, config.data.root, config.data.download)


def local_gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def cmd_spaces(args: list[str]) -> int:
    if args:
        raise UsageError(f"spaces takes no arguments, got {' '.join(args)}")
    for name in builtin_space_names():
        space = load_space(name)
        print(f"{name}: {space.description}  (metric {space.metric}, {space.mode})")
        for key, dist in space.hyperparameters.items():
            print(f"    {key:<14} {describe_distribution(dist)}")
        for key, value in space.constants.items():
            print(f"    {key:<14} fixed at {value} (override with {key}=...)")
    return 0
