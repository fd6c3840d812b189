"""How the search's TPE is set up, on synthetic objectives shaped like resnet_mnist's (no training, about 2 minutes on
one core): random search, Optuna's TPE as it comes (a categorical's choices unrelated, a tenth of the trials as
"good"), each of the search's two changes alone, and both (`search.running.searcher`). Every variant proposes
through `StudySearcher` one trial after another; the figure is the true score of the trial chosen by its observed
(noisy) score, averaged over the seeds.

    python -m benchmarks.samplers [--seeds 100]
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers import RandomSampler, TPESampler

from search.running.endings import Ending
from search.running.sampler import startup_trials
from search.running.searcher import StudySearcher
from search.running.study import StudyRecord

BATCHES = [256, 32, 128, 64]  # a user's order; as numbers they are ordered all the same
SHAPED = {
    "lr": FloatDistribution(0.005, 0.5, log=True),
    "batch_size": CategoricalDistribution(BATCHES),
    "shift": IntDistribution(0, 4),
}
WIDE = {
    **SHAPED,
    "weight_decay": FloatDistribution(1e-5, 1e-2, log=True),
    "label_smoothing": FloatDistribution(0.0, 0.2),
}


def good_group(finished: int) -> int:
    """How many of the finished trials the earlier settings modelled as good: a fifth (Optuna's default is a tenth),
    at most 25."""
    return min(25, math.ceil(0.2 * finished))


def tuned_tpe(seed: int, startup: int, fifth: bool = True) -> TPESampler:
    """TPE with the settings the search used until the replays chose Optuna's defaults: multivariate, the constant
    liar, a fifth of the finished trials as good (the replays' `tpe=tuned` arm)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # experimental and deprecated arguments
        return TPESampler(
            seed=seed,
            n_startup_trials=startup,
            multivariate=True,
            constant_liar=True,
            gamma=good_group if fifth else None,
        )


def shaped_score(config: dict) -> float:
    """Like resnet_mnist on few digits: smaller batches train better, the best lr grows with the batch size."""
    larger = math.log2(config["batch_size"] / 32)
    best_lr = math.log10(0.06) + 0.2 * larger
    return -0.25 * larger**1.5 - 1.4 * (math.log10(config["lr"]) - best_lr) ** 2 - 0.15 * abs(config["shift"] - 3)


def wide_score(config: dict) -> float:
    """A test accuracy in percent over resnet_mnist's whole space, best (99.55) at its documented recipe."""
    decay_off = math.log10(config["weight_decay"]) - math.log10(5e-4)
    return 99.55 + shaped_score(config) - 0.1 * decay_off**2 - 15 * (config["label_smoothing"] - 0.1) ** 2


VARIANTS = {  # name: (sampler, the choice among numbers ordered, a fifth as good)
    "random": ("random", False, False),
    "Optuna's TPE": ("tpe", False, False),
    "ordered choices": ("tpe", True, False),
    "a fifth as good": ("tpe", False, True),
    "both (the search)": ("tpe", True, True),
}


def searcher_for(space: dict, variant: str, seed: int, trials: int) -> StudySearcher:
    kind, ordered, fifth = VARIANTS[variant]
    sampler = RandomSampler(seed=seed) if kind == "random" else tuned_tpe(seed, startup_trials(trials), fifth)
    return StudySearcher(StudyRecord.in_memory(space, "score", "max", sampler, 1, ordered), [], "score", "max")


def chosen_score(space: dict, score, variant: str, seed: int, trials: int, noise: float) -> float:
    """The true score of the trial with the best observed score."""
    rng, search, best = np.random.default_rng(1000 + seed), searcher_for(space, variant, seed, trials), (-math.inf, 0.0)
    for index in range(trials):
        config = search.suggest(str(index))
        true = score(config)
        observed = true + rng.normal(0.0, noise)
        search.on_trial_complete(str(index), {"score": observed, "epoch": 1})
        search.record.end(str(index), Ending("completed"))
        best = max(best, (observed, true))
    return best[1]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.samplers", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="seeds per variant and objective")
    seeds = parser.parse_args().seeds
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    objectives = [
        ("shaped, 3 keys", SHAPED, shaped_score, 0.0),
        ("wide, 5 keys, noise 0.15", WIDE, wide_score, 0.15),
        ("wide, 5 keys", WIDE, wide_score, 0.0),
    ]
    print("| objective | trials | " + " | ".join(VARIANTS) + " |")
    print("|---|---|" + "---|" * len(VARIANTS))
    for label, space, score, noise in objectives:
        for trials in (12, 16):
            means = [np.mean([chosen_score(space, score, v, s, trials, noise) for s in range(seeds)]) for v in VARIANTS]
            print(f"| {label} | {trials} | " + " | ".join(f"{m:.3f}" for m in means) + " |", flush=True)


if __name__ == "__main__":
    main()
