"""How Optuna proposes, fit for a search's budget. No Ray.

TPE is Optuna's `TPESampler` as it comes, but for its random start: a quarter of the trials (2 to 10) instead of
Optuna's 10, plus the configurations given first (`enqueue=`), so that a default search is guided after its first
few trials and TPE still explores after the given ones. Replayed on the learning-curve tables (benchmarks/README.md,
"the sampler's settings"), Optuna's other defaults (a tenth of the finished trials as good, each key modelled on its
own, no constant liar) were level with or better than the settings the search used to add, and Optuna's start of 10
was behind a quarter on `cnn_mnist`'s held-out seeds.
"""

from __future__ import annotations

from optuna.samplers import RandomSampler, TPESampler


def startup_trials(trials: int) -> int:
    """TPE's random start: a quarter of the budget, at least 2 and at most Optuna's default of 10."""
    return max(2, min(10, trials // 4))


def make_sampler(sampler: str, seed: int, startup: int) -> RandomSampler | TPESampler:
    """`startup`: TPE's random start in finished trials (`startup_trials`, plus the configurations given first)."""
    if sampler == "random":
        return RandomSampler(seed=seed)
    return TPESampler(seed=seed, n_startup_trials=startup)
