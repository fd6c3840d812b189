"""The searched hyperparameters as the study holds them, and whether a value is one of a distribution's. Optuna only:
no Ray, no torch."""

from __future__ import annotations

import math

from optuna.distributions import CategoricalDistribution, IntDistribution


class SpaceCoding:
    """The searched hyperparameters as the study holds them: the values themselves (`batch_size` 128), or with
    `order_numbers=True` a categorical whose choices are all numbers (three or more) as its position in the sorted
    choices (an IntDistribution, a study begun so: docs/design.md). `to_config` gives the values that trained."""

    def __init__(self, space: dict, order_numbers: bool = False):
        self.space = space
        self.ordered = ordered_choices(space) if order_numbers else {}
        self.distributions = {**space, **{name: IntDistribution(0, len(c) - 1) for name, c in self.ordered.items()}}

    def to_config(self, params: dict) -> dict:
        return {name: self.ordered[name][value] if name in self.ordered else value for name, value in params.items()}

    def to_params(self, config: dict) -> dict:
        """The study's values of a configuration's searched keys (other keys are left out)."""
        return {
            name: self.ordered[name].index(value) if name in self.ordered else value
            for name, value in config.items()
            if name in self.space
        }

    def refusal(self, config: dict) -> str | None:
        """Why a given configuration is not in the space (a key it does not search, a value outside its range)."""
        for name, value in config.items():
            if name not in self.space:
                return f"{name} is not searched (searched: {', '.join(self.space) or 'none'})"
            if not contains(self.space[name], value):
                return f"{name}={value} is outside the space ({self.space[name]})"
        return None


def contains(distribution, value) -> bool:
    """Whether `value` is one of `distribution`'s values (its range, its step, its choices)."""
    if isinstance(distribution, CategoricalDistribution):
        return any(value == c and isinstance(value, bool) == isinstance(c, bool) for c in distribution.choices)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(distribution, IntDistribution) and value != int(value):
        return False
    if not distribution.low <= value <= distribution.high:
        return False
    step = getattr(distribution, "step", None)
    return not step or math.isclose((value - distribution.low) / step, round((value - distribution.low) / step))


def ordered_choices(space: dict) -> dict[str, list]:
    """The categoricals of three or more choices, all numbers, each sorted (two choices have no order for TPE)."""

    def orderable(distribution) -> bool:
        choices = distribution.choices if isinstance(distribution, CategoricalDistribution) else ()
        return len(choices) > 2 and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in choices)

    return {name: sorted(d.choices) for name, d in space.items() if orderable(d)}
