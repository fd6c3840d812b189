"""How Optuna proposes, fit for a search's budget. No Ray.

TPE's random start is a quarter of the trials (2 to 10), so a default search of 8 trials is guided for 6 of them,
plus the configurations given first (`enqueue=`), so that TPE still explores after them; its "good" group is a
fifth of the finished trials (Optuna's default tenth is 2 of 12 trials, too few to outline a region); TPE is
multivariate (lr, batch size and weight decay are modelled together, not one by one); trials proposed while others
run see those as "constant liars", so trials started side by side do not get near-identical proposals.
"""

from __future__ import annotations

import math
import warnings

import optuna
from optuna.samplers import RandomSampler, TPESampler


def startup_trials(trials: int) -> int:
    """TPE's random start: a quarter of the budget, at least 2 and at most Optuna's default of 10."""
    return max(2, min(10, trials // 4))


def good_group(finished: int) -> int:
    """How many of the finished trials TPE models as good: a fifth (Optuna's default is a tenth), at most 25."""
    return min(25, math.ceil(0.2 * finished))


def make_sampler(sampler: str, seed: int, startup: int) -> RandomSampler | TPESampler:
    """`startup`: TPE's random start in finished trials (`startup_trials`, plus the configurations given first)."""
    if sampler == "random":
        return RandomSampler(seed=seed)
    # multivariate and constant_liar are marked experimental; gamma is deprecated from Optuna 4.9 and scheduled to go
    # in 6.0, which pyproject.toml excludes (a fifth beat the default tenth on every synthetic space in docs/design.md)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.simplefilter("ignore", FutureWarning)
        return TPESampler(seed=seed, n_startup_trials=startup, gamma=good_group, multivariate=True, constant_liar=True)
