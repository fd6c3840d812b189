"""One configuration is one trial. A search with nothing left to search (every searched hyperparameter pinned, and no
cost knob searched for several objectives) trains its one configuration once; `trials=N` given with it asks for N
repeats of that configuration, each with its own seed, to see how much the result owes to chance.

A repeat's seed is the run's `seed` plus the repeat's place among the search's trials (0, 1, 2, ... for `seed=0`):
it seeds the initial weights, the batch order and the augmentation draws. The validation split (and the test split)
stays the run's, so that every repeat is judged on the same images. The study keeps each trial's seed as its user
attribute `seed`, and the trial's configuration carries it: the trial table and summary.json show it, and a
resumed or continued trial trains on with the seed it began with. No Ray, no torch."""

from __future__ import annotations

SEED_KEY = "seed"  # a repeat's seed: the trial's configuration key and the study's user attribute
LISTED_SEEDS = 6  # more repeats than this are named by their first and last seed


def searched_names(space, fixed: dict) -> list[str]:
    """The hyperparameters that a search of `space` (the space its objectives search: the cost knobs with several)
    still searches once `fixed` are pinned."""
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
