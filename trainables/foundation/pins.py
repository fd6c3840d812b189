"""What a pinned hyperparameter may be: what the model and the loop can build; a pin outside the space is warned."""

from __future__ import annotations

import math
from collections.abc import Callable

from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

from trainables.foundation.errors import UsageError


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _number(value) -> bool:
    """A finite int or float: inf and nan build no model and train nothing."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


POSITIVE_INT = ("a positive integer", _positive_int)
ZERO_TO_ONE = ("in [0, 1)", lambda value: _number(value) and 0 <= value < 1)
AT_LEAST_ZERO = (">= 0", lambda value: _number(value) and value >= 0)

# name -> (what it accepts, in words; whether a value is accepted)
RULES: dict[str, tuple[str, Callable[[object], bool]]] = {
    "lr": ("> 0", lambda value: _number(value) and value > 0),
    "dropout": ZERO_TO_ONE,
    "momentum": ZERO_TO_ONE,
    "label_smoothing": ZERO_TO_ONE,
    "weight_decay": AT_LEAST_ZERO,
    "shift": AT_LEAST_ZERO,
    "rotate": AT_LEAST_ZERO,
    "train_pct": ("in (0, 1)", lambda value: _number(value) and 0 < value < 1),
    "batch_size": POSITIVE_INT,
    "hidden": POSITIVE_INT,
    "layers": POSITIVE_INT,
    "width": POSITIVE_INT,
    "image_size": POSITIVE_INT,
}


def refuse_unbuildable(key: str, text: str, value, own: BaseDistribution | object | None = None) -> None:
    """Refuse `key=text` (parsed as `value`) when the model or the loop cannot build it; never a value inside `own`'s
    searched range, and an integer rule only for an integer knob (`own`: the space's distribution or constant)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"{key}={text}: must be a finite number")
    rule = RULES.get(key)
    if rule is None or rule[1](value):
        return
    if isinstance(own, BaseDistribution) and _within(own, value) and _number(value):
        return
    if rule is POSITIVE_INT and not _integer_knob(own):
        return
    raise UsageError(f"{key}={text}: must be {rule[0]}")


def _integer_knob(own) -> bool:
    """Whether the space's own knob of a name is an integer one (or unknown: a built-in loop key)."""
    if own is None:
        return True
    if isinstance(own, CategoricalDistribution):
        return numeric_choices(own) is int
    if isinstance(own, BaseDistribution):
        return type(own).__name__ == "IntDistribution"
    return isinstance(own, int) and not isinstance(own, bool)


def numeric_choices(dist: CategoricalDistribution) -> type | None:
    """int or float when every choice of `dist` is a number (a pin may then lie between them), else None."""
    choices = dist.choices
    if not choices or not all(_number(choice) for choice in choices):
        return None
    return int if all(isinstance(choice, int) for choice in choices) else float


def pin_warnings(searched: dict[str, BaseDistribution], fixed: dict) -> list[str]:
    """One `warning:` line per pin of a searched hyperparameter outside its searched range or choices; it is kept."""
    lines = []
    for key, value in fixed.items():
        dist = searched.get(key)
        if dist is None or _within(dist, value):
            continue
        categorical = isinstance(dist, CategoricalDistribution)
        where = "not among the searched choices" if categorical else "outside the searched range"
        text = f"{value:g}" if isinstance(value, float) else value
        lines.append(f"warning: {key}={text} is {where} ({describe_distribution(dist)})")
    return lines


def _within(dist: BaseDistribution, value) -> bool:
    if isinstance(dist, CategoricalDistribution):
        return any(value == choice and isinstance(value, bool) == isinstance(choice, bool) for choice in dist.choices)
    low, high = getattr(dist, "low", None), getattr(dist, "high", None)
    return low is None or not _number(value) or low <= value <= high


def describe_distribution(dist: BaseDistribution) -> str:
    """A human-readable range, e.g. 'float, log scale, 0.0001 .. 0.3'."""
    if isinstance(dist, CategoricalDistribution):
        return "one of " + ", ".join(str(c) for c in dist.choices)
    if isinstance(dist, (FloatDistribution, IntDistribution)):
        kind = "float" if isinstance(dist, FloatDistribution) else "int"
        scale = ", log scale" if dist.log else ""
        has_step = dist.step is not None and not (kind == "int" and dist.step == 1)
        step = f", step {dist.step:g}" if has_step else ""
        return f"{kind}{scale}{step}, {dist.low:g} .. {dist.high:g}"
    return repr(dist)
