"""Optuna proposes the trials: its ask-and-tell interface behind Ray Tune's public `Searcher` API.

A sampler fit for a search's budget (`make_sampler`): TPE's random start is a quarter of the trials (2 to 10), so
a default search of 8 trials is guided for 6 of them; its "good" group is a fifth of the finished trials (Optuna's
default tenth is 2 of 12 trials, too few to outline a region); TPE is multivariate (lr, batch size and weight decay
are modelled together, not one by one); trials proposed while others run see those as "constant liars", so trials
started side by side do not get near-identical proposals. TPE sees a choice among numbers (batch size 32, 64, 128,
256) as ordered: Optuna models a categorical's choices as unrelated, so after one good trial at 256 it keeps
drawing 256 and rarely 128; as the position in the sorted choices, a good 256 also makes 128 likelier. A trial ASHA
stopped reaches the study as pruned with every epoch it reported, not as a complete trial scored at an early epoch;
a failed or diverged one as failed.
"""

from __future__ import annotations

import math
import pickle
import warnings

import optuna
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.samplers import RandomSampler, TPESampler
from optuna.trial import TrialState
from ray.tune.search import Searcher

STEP_KEY = "epoch"


def startup_trials(trials: int) -> int:
    """TPE's random start: a quarter of the budget, at least 2 and at most Optuna's default of 10."""
    return max(2, min(10, trials // 4))


def good_group(finished: int) -> int:
    """How many of the finished trials TPE models as good: a fifth (Optuna's default is a tenth), at most 25."""
    return min(25, math.ceil(0.2 * finished))


def make_sampler(sampler: str, seed: int, trials: int) -> RandomSampler | TPESampler:
    if sampler == "random":
        return RandomSampler(seed=seed)
    # multivariate and constant_liar are marked experimental; gamma is deprecated from Optuna 4.9 and scheduled to go
    # in 6.0, which pyproject.toml excludes (a fifth beat the default tenth on every synthetic space in docs/design.md)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.simplefilter("ignore", FutureWarning)
        return TPESampler(seed=seed, n_startup_trials=startup_trials(trials), gamma=good_group, multivariate=True,
                          constant_liar=True)  # fmt: skip


def ordered_choices(space: dict) -> dict[str, list]:
    """The categoricals of three or more choices, all numbers, each with its choices sorted (two have no order that
    TPE could use)."""
    def orderable(distribution) -> bool:
        choices = distribution.choices if isinstance(distribution, CategoricalDistribution) else ()
        return len(choices) > 2 and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in choices)

    return {name: sorted(d.choices) for name, d in space.items() if orderable(d)}


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class StudySearcher(Searcher):
    """One Optuna study: `suggest` asks it for a trial's hyperparameters, every reported epoch is an intermediate
    value, and a trial's end tells it complete, pruned (stopped before `epochs`) or failed."""

    def __init__(self, space: dict, metric: str, mode: str, sampler, epochs: int, order_numbers: bool = True):
        super().__init__(metric=metric, mode=mode)
        self.space, self.epochs = space, epochs
        # TPE is given an ordered choice's position; random sampling is uniform either way and keeps its draws
        self.ordered = ordered_choices(space) if order_numbers and isinstance(sampler, TPESampler) else {}
        self.study_space = {**space, **{name: IntDistribution(0, len(c) - 1) for name, c in self.ordered.items()}}
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        direction = "maximize" if mode == "max" else "minimize"
        self.study = optuna.create_study(direction=direction, sampler=sampler)
        self.running: dict[str, optuna.trial.Trial] = {}
        self.steps: dict[str, set[int]] = {}  # epochs already reported per running trial (a resumed one replays)

    def suggest(self, trial_id: str) -> dict:
        trial = self.study.ask(self.study_space)
        self.running[trial_id], self.steps[trial_id] = trial, set()
        return {name: self.ordered[name][value] if name in self.ordered else value
                for name, value in trial.params.items()}  # fmt: skip

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        trial, value, step = self.running.get(trial_id), result.get(self.metric), result.get(STEP_KEY)
        if trial is None or not _finite(value) or step is None:
            return
        if int(step) not in self.steps[trial_id]:
            self.steps[trial_id].add(int(step))
            trial.report(float(value), int(step))

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        trial = self.running.pop(trial_id, None)
        self.steps.pop(trial_id, None)
        if trial is None:
            return
        result = result or {}
        value = result.get(self.metric)
        if error or result.get("diverged") or not _finite(value):
            self.study.tell(trial, state=TrialState.FAIL)
        elif int(result.get(STEP_KEY) or 0) < self.epochs:
            self.study.tell(trial, state=TrialState.PRUNED)  # Optuna ranks it by its last intermediate value
        else:
            self.study.tell(trial, float(value))

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as file:
            pickle.dump(self.__dict__, file)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as file:
            self.__dict__.update(pickle.load(file))
