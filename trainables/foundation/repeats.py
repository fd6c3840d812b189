"""Repeats: a search with nothing left to search trains its one configuration `trials=N` times, seeds apart."""

from __future__ import annotations

import math

SEED_KEY = "seed"  # a repeat's seed: the trial's configuration key and the study's user attribute
LISTED_SEEDS = 6  # more repeats than this are named by their first and last seed


def searched_names(space, fixed: dict) -> list[str]:
    """The hyperparameters that a search of `space` still searches once `fixed` are pinned."""
    return [name for name in space.hyperparameters if name not in fixed]


def training_seed(run_seed: int, hp: dict) -> int:
    """The seed of a trial's initial weights, batch order and augmentation: a repeat's own, else the run's."""
    return int(hp.get(SEED_KEY, run_seed))


def seed_of(trial) -> dict:
    """{"seed": N} for a study trial (an Optuna FrozenTrial) that is a repeat, else {}: its configuration's seed."""
    seed = trial.user_attrs.get(SEED_KEY)
    return {} if seed is None else {SEED_KEY: seed}


def repeats_words(run_seed: int, trials: int) -> str:
    """The plan's words for a search with nothing left to search."""
    if trials == 1:
        return "nothing left to search: every searched hyperparameter is pinned, so one trial (trials=N: N repeats)"
    seeds = [run_seed + number for number in range(trials)]
    named = ", ".join(map(str, seeds)) if trials <= LISTED_SEEDS else f"{seeds[0]} to {seeds[-1]}"
    return f"nothing left to search: {trials} repeats of one configuration, seeds {named}"


def spread(values: list[float]) -> dict:
    """{"mean", "std", "n"} of the repeats' values: the sample standard deviation (n - 1; 0.0 for one value), the
    spread a reader quotes beside the mean of N seeds."""
    n = len(values)
    mean = sum(values) / n if n else math.nan
    std = math.sqrt(sum((value - mean) ** 2 for value in values) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "std": std, "n": n}
