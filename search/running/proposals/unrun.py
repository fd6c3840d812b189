"""A space of finitely many configurations (every searched key a choice or an integer range): the search proposes
each configuration once. Every trial trains with the run's seed, so a configuration proposed again trains the same
curve and teaches the sampler nothing; replayed on learning-curve tables, the search's TPE re-ran a configuration it
had already run in about two of every five trials (benchmarks/HISTORY.md). The sampler is asked for a configuration
no trial holds, five times at most, then one is drawn at random among those none holds; the stop rule runs no more
trials than the space has configurations left (`study_setup.search_trials`). A space with a continuous range is left
to the sampler as it is: its proposals are the sampler's own, unchanged.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.samplers import BaseSampler
from optuna.trial import TrialState

from search.running.study.queries import trial_id_of

ASKS = 5  # the sampler's own proposals tried before one drawn among those no trial holds
FIXED_PARAMS = "fixed_params"  # where Optuna keeps a trial's configuration given with `enqueue=` (some keys, or all)


def choices_of(distribution) -> list | range | None:
    """Every value a distribution can take (an integer range as a `range`: never built), or None when continuous."""
    if isinstance(distribution, CategoricalDistribution):
        return list(distribution.choices)
    if isinstance(distribution, IntDistribution):
        return range(distribution.low, distribution.high + 1, distribution.step)
    return None


def configuration_count(distributions: dict) -> int | None:
    """How many configurations the searched keys hold; None with a continuous range or nothing searched."""
    choices = [choices_of(distribution) for distribution in distributions.values()]
    if not choices or any(values is None for values in choices):
        return None
    return math.prod(len(values) for values in choices)


def configurations_words(count: int) -> str:
    return "1 configuration" if count == 1 else f"{count} configurations"


def held_configurations(trials, names: list[str]) -> set[tuple]:
    """The configurations the search's trials hold (those it named: not a proposal a kill cut short before it was
    named, which never trained; and a whole one given with `enqueue=` still waiting its turn), as tuples in the order
    of `names`."""
    wanted, held = set(names), set()
    for trial in trials:
        params = trial.params if trial_id_of(trial) else {}
        params = trial.system_attrs.get(FIXED_PARAMS, {}) if trial.state == TrialState.WAITING else params
        if wanted <= params.keys():
            held.add(tuple(params[name] for name in names))
    return held


def once_each(base: BaseSampler, distributions: dict, seed: int | None) -> BaseSampler:
    """`base` itself over a space with a continuous range; over a finite one, `base` proposing each configuration
    once (`distributions`: the searched keys as the study holds them)."""
    return base if configuration_count(distributions) is None else OnceEachSampler(base, distributions, seed)


class OnceEachSampler(BaseSampler):
    """`base`'s whole configuration proposed at once (its relative proposal, the rest from its own independent
    draws); while some trial holds it, `base` is asked again (ASKS in all), then one none holds is drawn at random.
    A trial given some keys with `enqueue=` keeps them: the rest is chosen so that the whole is held by no trial."""

    def __init__(self, base: BaseSampler, distributions: dict, seed: int | None):
        self.base, self.distributions = base, dict(distributions)
        self.names = list(self.distributions)
        self.draws = np.random.default_rng(None if seed is None else seed + 7919)  # apart from the base's draws

    def infer_relative_search_space(self, study, trial) -> dict:
        return dict(self.distributions)  # every key proposed together, so that a repeat is seen whole

    def sample_relative(self, study, trial, search_space) -> dict:
        held = held_configurations(study.get_trials(deepcopy=False), self.names)
        given = {k: v for k, v in trial.system_attrs.get(FIXED_PARAMS, {}).items() if k in self.distributions}
        for _ in range(1 if len(given) == len(self.names) else ASKS):  # all given: nothing left to choose
            params = {**self._whole(study, trial), **given}
            if tuple(params[name] for name in self.names) not in held:
                return params
        return self._unheld(held, given) or params  # every configuration held: the sampler's own, a repeat

    def _whole(self, study, trial) -> dict:
        params = dict(self.base.sample_relative(study, trial, self.base.infer_relative_search_space(study, trial)))
        for name, distribution in self.distributions.items():
            if name not in params:
                params[name] = self.base.sample_independent(study, trial, name, distribution)
        return params

    def _unheld(self, held: set[tuple], given: dict) -> dict | None:
        """A configuration no trial holds (with the keys `given`), drawn at random: by rejection, or among all of
        them when most are held."""
        values = [[given[name]] if name in given else choices_of(self.distributions[name]) for name in self.names]
        for _ in range(64):
            picked = tuple(choices[self.draws.integers(len(choices))] for choices in values)
            if picked not in held:
                return dict(zip(self.names, picked))
        unheld = [picked for picked in itertools.product(*values) if picked not in held]  # few: most are held
        return dict(zip(self.names, unheld[self.draws.integers(len(unheld))])) if unheld else None

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self.base.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study, trial) -> None:
        self.base.before_trial(study, trial)

    def after_trial(self, study, trial, state, values) -> None:
        self.base.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.base.reseed_rng()
        self.draws = np.random.default_rng()
