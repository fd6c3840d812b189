"""The CLI's subcommands. Each takes the words after its name and returns an exit code."""

from __future__ import annotations

import functools
import os
import textwrap
import time
from pathlib import Path

from search.results.summary import SUMMARY_FILE, format_front, format_table
from search.running.joining.cluster import resolve_address
from search.start import start
from trainables.foundation.config import RunConfig, config_keys, parse_overrides, split_override, trials_given
from trainables.foundation.config_help import format_help, help_rows
from trainables.foundation.errors import UsageError
from trainables.foundation.loop_keys import LOOP_KEYS, parse_loop_key
from trainables.foundation.objectives import objectives_of
from trainables.foundation.pins import describe_distribution
from trainables.foundation.repeats import searched_names
from trainables.foundation.schedules import PROMOTING_REDUCTION, first_rung, schedules_of
from trainables.foundation.space import Space, builtin_space_names, coerce_hyperparameter, load_run_space, load_space
from trainables.foundation.storage import Experiment, filesystem, is_uri

RUN_USAGE = "usage: python -m search run space=NAME [key=value ...] [--dry-run]"
PINNING = (
    "A hyperparameter given as key=value (lr=0.01) is pinned: a searched one is taken out of the search. Besides the "
    f"space's own (`python -m search spaces` lists them), any space takes the training loop's {', '.join(LOOP_KEYS)}."
)
DRY_RUN = "--dry-run: check every key, the data and the machine, print the plan (shape, stop rule, estimate); no Ray."


def cmd_run(args: list[str]) -> int:
    if any(a in ("-h", "--help") for a in args):
        print(RUN_USAGE + "\n\nkeys (key=default):\n" + format_help(help_rows()))
        print("\n" + textwrap.fill(PINNING, 116) + "\n" + DRY_RUN)
        return 0
    dry = "--dry-run" in args
    args = [arg for arg in args if arg != "--dry-run"]
    config, space = parse_run(args)
    if dry:
        from search.plan import dry_run

        return dry_run(config, space)
    result = start(config, space, args)
    print_result(result.summary, result.experiment)
    return 0


def print_result(summary: dict, experiment: Experiment) -> None:
    print()
    print(format_table(summary))
    best = summary["best"]
    print(
        f"\nbest: trial {best['trial_id']} epoch {best['epoch']} "
        f"{summary['metric']}={best['metrics'][summary['metric']]:.4f}"
        f"{test_text(best)}"
    )
    print(f"best checkpoint: {experiment.checkpoint_location(best['checkpoint'])}")
    budget = summary["run"].get("epoch_budget")
    if budget:
        print(f"epochs: {summary.get('epochs_spent')} trial-epochs spent of the epoch budget of {budget}")
    if summary.get("front"):
        print("\n" + format_front(summary))
    print(f"summary: {experiment.join(SUMMARY_FILE)}")
    tracking = summary["run"].get("tracking") or {}
    if tracking.get("to") == "mlflow":
        from search.running.tracking.mlflow_store import mlflow_ui_words

        print(f"mlflow: {mlflow_ui_words(tracking.get('uri'), experiment)}")
    from search.running.driver_words import next_commands_words

    print(next_commands_words(experiment.location))


def test_text(best: dict) -> str:
    if "test_acc" not in best:
        return " (no test split: the figure is the validation split's, which chose it)"
    metric = "".join(f" {k}={v:.4f}" for k, v in best.items() if k.startswith("test_") and k not in TEST_COUNTS)
    return f"{metric} test_acc={best['test_acc']:.4f} ({best['test_samples']} test images the search never saw)"


TEST_COUNTS = ("test_acc", "test_samples")  # beside them: the space's metric on the test split (test_f1)


RESUME_USAGE = (
    "usage: python -m search resume EXPERIMENT_DIR [trials=N] [epoch_budget=N] [time_budget=S] [concurrency=N] "
    "[verbose=1] [tracking=mlflow] [tracking.uri=URI] [tracking.experiment=NAME]"
)
TRACKING_KEYS = {"tracking", "tracking.uri", "tracking.experiment", "verbose"}
RESUME_KEYS = {"trials", "epoch_budget", "time_budget", "concurrency"} | TRACKING_KEYS


def resumed_config(before: dict, options: dict[str, str]) -> RunConfig:
    """The search's settings with the keys `resume` may change: more trials (a grown search), the time budget,
    concurrency, verbosity and tracking. A different `epochs` is refused: a finished trial is final in the study (Optuna
    cannot reopen a COMPLETE trial) and the spaces' annealing schedules end at the old last epoch."""
    if "epochs" in options and options["epochs"] != str(before["epochs"]):
        raise UsageError(
            f"epochs={options['epochs']}: a search's epochs cannot change on resume: its finished trials "
            f"are final in its study and their learning-rate schedules ended at epoch {before['epochs']}; "
            "start a new search with enqueue=<this experiment> to train its best configurations longer"
        )
    changed = parse_overrides([f"{key}={value}" for key, value in options.items() if key != "epochs"])
    config = RunConfig.from_dict(before)
    for key in options.keys() - {"epochs"}:
        *_, section, name = config_keys()[key]
        source, target = (getattr(changed, section), getattr(config, section)) if section else (changed, config)
        setattr(target, name, getattr(source, name))
    if "trials" in options:
        config.trials_given = True
    if "epoch_budget" in options and "trials" not in options and not trials_given(before):  # trials= caps
        if searched_names(load_run_space(config), config.fixed):  # with nothing to search: its trials, as on `run`
            config.trials = max(config.epoch_budget, before["trials"])  # trials follow from the budget, as on `run`
    if config.asha_for_one and config.trials > 1:  # grown past the one trial asha=auto stopped for
        config.asha, config.asha_for_one = "promote", False
    RunConfig.from_dict(config.to_dict())  # the cross-field checks
    return config  # grown by search.running.growth, which knows the trials the study holds


def split_options(args: list[str], allowed: set[str]) -> tuple[list[str], dict[str, str], set[str]]:
    """(positional words, key=value options, --flags), refusing keys and flags not in `allowed`."""
    positional, options, flags = [], {}, set()
    for arg in args:
        if arg.startswith("--"):
            flags.add(arg)
        elif "=" in arg and not os.path.exists(arg):
            key, value = split_override(arg)
            options[key] = value
        else:
            positional.append(arg)
    for name in [*options, *flags]:
        if name not in allowed:
            raise UsageError(f"{name}: unknown option; allowed: {', '.join(sorted(allowed))}")
    return positional, options, flags


def parse_run(args: list[str]) -> tuple[RunConfig, Space]:
    """Parse `run` arguments into a complete RunConfig (space resolved, paths absolute, name set)."""
    space_refs = [value for key, value in map(split_override, args) if key == "space"]
    if not space_refs:
        raise UsageError(f"space= is required; known spaces: {', '.join(builtin_space_names())}")
    space = load_space(space_refs[-1])
    parsers = {name: functools.partial(parse_loop_key, name) for name in LOOP_KEYS}
    parsers |= {name: functools.partial(coerce_hyperparameter, space, name) for name in space.hyperparameter_names()}
    config = parse_overrides(args, parsers)
    given = dict(map(split_override, args))
    config.trials_given = "trials" in given  # kept in the settings: an epoch budget `resume` grows lifts no cap given
    if config.epoch_budget and "trials" not in given:
        config.trials = config.epoch_budget  # the budget decides how many trials: each spends one epoch at least
    space = space.for_objectives(len(objectives_of(config, space)))  # refuses an unknown objective, naming it
    if not searched_names(space, config.fixed):  # one configuration is one trial; trials=N: N repeats, not raced
        config.trials = config.trials if "trials" in given else 1
        config.grace = config.grace if "grace" in given else config.epochs
    config.address = resolve_address(config.address, os.environ)
    if os.path.exists(config.space):
        config.space = str(Path(config.space).resolve())
    config.name = config.name or f"{space.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    schedules = schedules_of(space.constants, space.hyperparameters, config.fixed)
    rungs_given = "grace" in given or "reduction" in given  # either given: the other as under asha=stop
    promoting = config.asha == "promote" and not rungs_given
    config.grace = config.grace or first_rung(config.epochs, schedules, promoting=promoting)
    if given.get("asha", "auto").strip() == "auto" and config.asha == "promote":
        if config.grace >= config.epochs:  # no rung: nothing to pause
            config.asha = "stop"
        elif config.trials == 1:  # none to rank it against: the promotion variant would only pause and restart it
            config.asha, config.asha_for_one = "stop", True
    if not rungs_given and config.may_promote():
        config.reduction = PROMOTING_REDUCTION  # the promotion variant's rungs: half goes on
    config.data.root = str(Path(config.data.root).expanduser().resolve())
    if is_uri(config.storage):
        filesystem(config.storage)  # refuses, in one line, a URI pyarrow cannot open
    else:
        config.storage = str(Path(config.storage).expanduser().resolve())
    return config, space


def cmd_spaces(args: list[str]) -> int:
    if args:
        raise UsageError(f"spaces takes no arguments, got {' '.join(args)}")
    print(textwrap.fill(PINNING, 116) + "\n")
    for name in builtin_space_names():
        space = load_space(name)
        print(f"{name}: {space.description}  (metric {space.metric}, {space.mode})")
        for key in dict.fromkeys(space.hyperparameter_names()):  # a name once, though a cost knob widens it
            print(f"    {key:<16} {space_key_words(space, key)}")
    return 0


def space_key_words(space: Space, key: str) -> str:
    """One line per name of a space: searched (its range), or fixed (its value), and what a second objective
    searches of it, when that differs."""
    cost = space.cost_hyperparameters.get(key)
    if key in space.hyperparameters:
        words = f"searched: {describe_distribution(space.hyperparameters[key])} ({key}=... pins it)"
        return f"{words}; with a second objective: {describe_distribution(cost)}" if cost else words
    if key in space.constants:
        words = f"fixed at {space.constants[key]} (override with {key}=...)"
        return f"{words}; searched with a second objective: {describe_distribution(cost)}" if cost else words
    return f"searched only with a second objective: {describe_distribution(cost)} ({key}=... pins it)"
