"""What a search optimizes: the space's metric, or several objectives (`objectives=val_acc,params`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainables.foundation.errors import UsageError

DIRECTIONS = {
    "val_acc": "max",
    "val_loss": "min",
    "val_f1": "max",
    "val_auc": "max",
    "params": "min",
    "macs": "min",
    "latency_ms": "min",
}
MEASURED = ("latency_ms",)
METRICS = ("val_acc", "val_loss", "val_f1", "val_auc")  # what validation reports built in (trainables.metrics)
OWN_METRIC_FORM = "your own 'path/to/file.py:function' or 'package.module:function'"


def metric_name(metric: str, space_name: str) -> str:
    """The name a space's `metric=` reports as: a built-in one as it is, an own function's as val_<function>;
    anything else is refused in one line naming what is accepted."""
    if metric in METRICS:
        return metric
    location, _, function = metric.rpartition(":")
    accepted = f"accepted: {', '.join(METRICS)}, or {OWN_METRIC_FORM} (reported as val_<function>)"
    if not location or not function.isidentifier():
        raise UsageError(f"space {space_name}: metric={metric} is unknown; {accepted}")
    name = f"val_{function}"
    if name in METRICS or name == "val_samples":  # a figure every row carries already
        raise UsageError(f"space {space_name}: metric={metric} would report as {name}, a built-in figure; rename it")
    return name


@dataclass(frozen=True)
class Objective:
    name: str
    mode: str  # "max" or "min"

    @property
    def direction(self) -> str:
        """Optuna's word for the mode."""
        return "maximize" if self.mode == "max" else "minimize"


def parse_objectives(text: str, metric: str, mode: str) -> list[Objective]:
    """`objectives=` as a list, primary first (the space's metric); a name may carry its direction."""
    if not text.strip():
        return [Objective(metric, mode)]
    objectives = []
    for word in (w.strip() for w in text.split(",")):
        name, _, given = word.partition(":")
        known = DIRECTIONS.get(name) or (mode if name == metric else None)
        if known is None:
            raise UsageError(f"objectives={text}: unknown objective {name!r}; allowed: {', '.join(DIRECTIONS)}")
        if given and given != known:
            raise UsageError(f"objectives={text}: {name} is {known}imised, not {given}imised")
        if any(o.name == name for o in objectives):
            raise UsageError(f"objectives={text}: {name} is named twice")
        objectives.append(Objective(name, known))
    if objectives[0].name != metric:
        raise UsageError(
            f"objectives={text}: the first objective is the primary and must be the space's metric, {metric} "
            f"(e.g. objectives={metric},{objectives[0].name})"
        )
    return objectives


def objectives_of(config, space) -> list[Objective]:
    """A run's objectives (`config.objectives`) for its space (whose metric is the primary)."""
    return parse_objectives(config.objectives, space.metric, space.mode)


BOUND = re.compile(r"^([a-z_]+)(<=|>=)([-+0-9.eE]+)$")


@dataclass(frozen=True)
class Bound:
    """A limit on one objective, as `export` takes it: `params<=200000`, `val_acc>=0.98`."""

    name: str
    op: str
    value: float

    def holds(self, value) -> bool:
        return value is not None and (value <= self.value if self.op == "<=" else value >= self.value)

    def excess(self, value) -> float:
        """How far `value` is outside the bound, relative to it (0 within it)."""
        if self.holds(value):
            return 0.0
        if value is None:
            return float("inf")
        return abs(value - self.value) / max(abs(self.value), 1e-12)

    def __str__(self) -> str:
        return f"{self.name}{self.op}{self.value:g}"


def parse_bound(text: str) -> Bound | None:
    """`name<=number` or `name>=number`, or None when `text` is no bound (another argument)."""
    match = BOUND.match(text.strip())
    if not match:
        return None
    name, op, number = match.groups()
    if name not in DIRECTIONS:
        raise UsageError(f"{text}: unknown objective {name!r}; allowed: {', '.join(DIRECTIONS)}")
    try:
        return Bound(name, op, float(number))
    except ValueError:
        raise UsageError(f"{text}: {number!r} is not a number") from None
