"""`run ... --dry-run`: every key and value parsed, the data and the machine checked, and the plan printed (the trial
shape, the stop rule, the estimate) without starting Ray or writing into storage."""

from __future__ import annotations

import contextlib
import io
import struct
import sys

from trainables.foundation.config import RunConfig
from trainables.foundation.pins import pin_warnings
from trainables.foundation.repeats import repeats_words, searched_names
from trainables.foundation.space import Space

LONG_LINE = "search: about "  # preflight's own estimate of a long search


def dry_run(config: RunConfig, space: Space) -> int:
    """Print what `run` would do with these words, having refused what it would refuse before Ray starts."""
    from search.running.preflight import fetched_since
    from trainables.foundation.fetching import placed_since

    mark = len(placed_since(0))
    said = checked(config, space)  # the same checks as `run`: keys' values, data, shape, weights, tracking
    print(f"search: {shape_words(config, space)}")
    print(f"stop rule: {stop_rule_words(config, space)}")
    if LONG_LINE not in said:
        print(f"estimate: {estimate_words(config, space)}")
    fetched = fetched_since(config, mark)  # the only writes a dry run may make: the data, the weights
    written = f"nothing written but {' and '.join(fetched)}" if fetched else "nothing written"
    print(f"dry run: nothing started, {written}; without --dry-run this search goes to {config.storage}/{config.name}")
    return 0


def checked(config: RunConfig, space: Space) -> str:
    """The checks before Ray starts, said (and returned) once they all passed, so that a refusal is one line; then a
    `warning:` line (stderr) per pin outside the searched range, the pin kept."""
    from search.running.preflight import preflight

    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        preflight(config, space)
    print(said.getvalue(), end="", flush=True)
    for line in pin_warnings(space.hyperparameters, config.fixed):
        print(line, file=sys.stderr)
    return said.getvalue()


def local_shape(config: RunConfig):
    """(trial shape, trials side by side) on this machine, or None on a cluster (decided when it answers)."""
    if config.address:
        return None
    from trainables.foundation.resources import local_cpu_count, local_gpu_count, plan_concurrency, settle_shape

    node = {"CPU": local_cpu_count(), "GPU": local_gpu_count()}
    shape = settle_shape(config, [node])
    return shape, plan_concurrency([node], shape, config.concurrency)


def shape_words(config: RunConfig, space: Space) -> str:
    """The `search:` line's plan: how many trials, how many side by side, each trial's shape, ASHA's first rung."""
    from search.running.driver_words import asha_words
    from search.running.proposals.study_setup import within_space

    capped = within_space(config, space)  # a finite space: at most its configurations, each once
    placed = local_shape(capped)
    if placed:
        shape, side_by_side = placed
        side = f"{side_by_side} at a time, {shape.in_words()} ({shape.keys()})"
    else:
        side = "the shape decided on the cluster when it answers"
    trials = trial_count(capped.trials)  # one configuration: one trial, or the repeats asked for
    if searched_names(space, config.fixed) and config.epoch_budget and config.trials >= config.epoch_budget:
        at_most = f", at most {capped.trials}" if capped.trials < config.trials else ""
        trials = f"trials until {config.epoch_budget} trial-epochs are spent{at_most}"
    asha = asha_words(config).removesuffix(", ") or "no early stopping"  # as the search's first line says it
    return f"{trials} of {space.name}, {side}, {asha}"


def stop_rule_words(config: RunConfig, space: Space) -> str:
    """The `stop rule:` line: the trial count or the epoch budget, the time budget, with nothing left to search
    (every searched key pinned) the repeats of the one configuration and their seeds, and where the space holds
    fewer configurations than trials, that many (each is proposed once)."""
    from search.running.proposals.study_setup import finite_count
    from search.running.proposals.unrun import configurations_words

    rules = []
    if config.epoch_budget:
        cap = "" if config.trials >= config.epoch_budget else f", at most {trial_count(config.trials)}"
        rules.append(f"an epoch budget of {config.epoch_budget} trial-epochs{cap} (epoch_budget=)")
    else:
        rules.append(f"{trial_count(config.trials)} of up to {config.epochs} epochs (trials=)")
    if config.time_budget:
        rules.append(f"{config.time_budget:g} s from the first trial's start (time_budget=)")
    if not searched_names(space, config.fixed):
        rules.append(repeats_words(config.seed, config.trials))
    count = finite_count(config, space)
    if count is not None and count < config.trials:
        rules.append(f"the space holds {configurations_words(count)}, each run once: at most {trial_count(count)}")
    return "; ".join(rules)


def trial_count(trials: int) -> str:
    return "1 trial" if trials == 1 else f"{trials} trials"


def estimate_words(config: RunConfig, space: Space) -> str:
    """Trial-epochs and images expected, and on CPU cores the training time at the speed of the space's model timed
    here as one trial trains it (its worker's threads), the trials side by side."""
    from search.running.estimate import asha_saving_words, expected_epochs, trial_images_per_s, typical_hyperparameters
    from search.running.proposals.study_setup import within_space
    from trainables.data import IdxDataset, get_dataset

    config = within_space(config, space)  # a finite space: at most its configurations, each once
    epochs = expected_epochs(config)
    dataset = get_dataset(space.dataset)
    asha = f" ({words.removeprefix(', ')})" if (words := asha_saving_words(config)) else ""
    if not isinstance(dataset, IdxDataset):
        return f"about {epochs:.0f} trial-epochs{asha}"
    images_file, _ = dataset.split_files(config.data.root, train=True)
    with open(images_file, "rb") as stream:
        count = int(struct.unpack(">I", stream.read(8)[4:])[0] * (1 - config.data.val_fraction))
    count = min(count, config.data.limit) if config.data.limit else count
    work = f"about {epochs:.0f} trial-epochs of {count:,} images{asha}"
    placed = local_shape(config)
    if not placed or placed[0].gpus_per_worker:
        return work  # a GPU's or a cluster's speed is not timed here
    shape, side_by_side = placed
    hp = typical_hyperparameters(space) | config.fixed
    threads = max(1, int(shape.cpus_per_worker))
    rate = trial_images_per_s(space, hp, dataset.info(config.data.root, hp), threads) * shape.workers
    seconds = epochs * count / (rate * side_by_side) * 1.1  # and validation: a tenth of the images, forward only
    speed = f"{side_by_side} trials at ~{rate:.0f} img/s each" if side_by_side > 1 else f"1 trial at ~{rate:.0f} img/s"
    took = f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"
    took = f"{seconds:.0f} s" if seconds < 90 else took
    return f"{work}: ~{took} of training, {speed}; Ray's start and each trial's start come on top"
