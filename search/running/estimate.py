"""About how long a search will take on this machine without a GPU, said before a long search starts and planned by
the dry run: the training images the trials will see (ASHA's expected share of the epochs) over the space's model
timed here as one trial trains it, times the trials side by side. A rough figure, meant to tell a user that a 3-hour
search is a 3-hour search, and which keys shorten it.
"""

from __future__ import annotations

import math

from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from trainables.foundation.resources import choose_shape, plan_concurrency
from trainables.foundation.schedules import rung_milestones

LONG_S = 600.0  # a search shorter than this goes without a word
CALIBRATE_ABOVE_IMAGES = 200_000  # below this many training images no search takes LONG_S: no steps are timed


def asha_epoch_share(epochs: int, grace: int, reduction: float) -> float:
    """The share of `trials x epochs` that ASHA is expected to run: every trial to `grace`, then 1/reduction of them
    on to each next rung (grace x reduction^k), the last share to `epochs`."""
    milestones = rung_milestones(epochs, grace, reduction)
    run, share, previous = 0.0, 1.0, 0.0
    for milestone in milestones:
        run += share * (milestone - previous)
        share, previous = share / reduction, milestone
    return (run + share * (epochs - previous)) / epochs


def typical_hyperparameters(space) -> dict:
    """A middle value of each searched range (the middle choice of a list), with the space's fixed values."""
    hp = dict(space.constants)
    for key, dist in space.hyperparameters.items():
        if isinstance(dist, CategoricalDistribution):
            hp[key] = dist.choices[len(dist.choices) // 2]
        elif isinstance(dist, (FloatDistribution, IntDistribution)):
            middle = math.sqrt(dist.low * dist.high) if dist.log else (dist.low + dist.high) / 2
            hp[key] = int(round(middle)) if isinstance(dist, IntDistribution) else middle
    return hp


def trial_images_per_s(space, hp: dict, info, threads: int) -> float:
    """Training images per second of the space's model on `threads` threads: the faster of two steps after a first,
    at a batch of 8 at most (an image costs about the same in a larger batch on CPU cores: the figure is rough)."""
    from trainables.models import model_for

    batch = min(8, int(hp.get("batch_size", 64)))
    key = (space.architecture, repr(sorted(space.builder_args(hp, info).items())), batch, threads, info.shape)
    if key not in TIMED:  # one model, one figure: a process planning several searches times each model once
        TIMED[key] = timed_steps(model_for(space, hp, info), batch, info, threads)
    return TIMED[key]


TIMED: dict[tuple, float] = {}


def timed_steps(model, batch: int, info, threads: int) -> float:
    """Images per second of `model`'s training steps on `threads` threads (the process's own count restored)."""
    import time

    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        images = torch.randn(batch, *info.shape)
        labels = torch.randint(0, info.num_classes, (batch,))
        steps = []
        for _ in range(3):
            started = time.perf_counter()
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(images), labels).backward()
            optimizer.step()
            steps.append(time.perf_counter() - started)
    finally:
        torch.set_num_threads(before)
    return batch / min(steps[1:])


def expected_epochs(config) -> float:
    """The trial-epochs a search is expected to train: ASHA's share of its trials' epochs, and under an epoch
    budget the budget itself (the epochs ASHA saves buy more trials) unless its trials cap it first. A lone trial has
    none to be ranked against: it trains every epoch."""
    share = 1.0 if config.trials == 1 else asha_epoch_share(config.epochs, config.grace, config.reduction)
    epochs = config.trials * config.epochs * share
    return min(epochs, config.epoch_budget) if config.epoch_budget else epochs


def long_search_line(config, space, train_images: int, info, cores: int) -> str | None:
    """The line to print before a long search on CPU cores, or None when it is short (or not measured). The speed is
    the dry run's: the model timed as one trial trains it, times the trials side by side."""
    epochs = expected_epochs(config)
    images = epochs * train_images
    if images < CALIBRATE_ABOVE_IMAGES:
        return None
    node = {"CPU": cores, "GPU": 0}  # the trial shape and the trials side by side as the search settles them
    shape = choose_shape([node], config.trials, config.workers, config.cpus, config.gpus, config.concurrency)
    side_by_side = plan_concurrency([node], shape, config.concurrency)
    threads = max(1, int(shape.cpus_per_worker))
    hp = typical_hyperparameters(space) | config.fixed
    rate = trial_images_per_s(space, hp, info, threads) * shape.workers * side_by_side
    seconds = images / rate * 1.1  # and validation: a tenth of the images, forward only
    if seconds < LONG_S:
        return None
    if config.epoch_budget and epochs == config.epoch_budget:
        work, keys = f"{config.epoch_budget} trial-epochs", "epoch_budget="
    else:
        trials = "1 trial" if config.trials == 1 else f"{config.trials} trials"
        work, keys = f"{trials} x up to {config.epochs} epochs", "trials="
    minutes = round(seconds / 60)
    duration = f"{minutes} min" if minutes < 90 else f"{minutes / 60:.1f} h"
    return (
        f"search: about {duration} on this machine's {cores} CPU cores, no GPU ({work} of {train_images:,} images at "
        f"~{rate:.0f} img/s{asha_saving_words(config)}; Ray's start and each trial's start come on top); shorten it "
        f"with {keys}, epochs= or data.limit="
    )


def asha_saving_words(config) -> str:
    """The words for ASHA's savings when it may stop trials before their last epoch (its promotion variant: pause
    them, the best going on), else nothing."""
    if config.grace >= config.epochs:
        return ""
    return ", ASHA pausing some" if config.asha == "promote" else ", ASHA stopping some"
