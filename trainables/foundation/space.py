"""The contract of a search space, and how spaces are found; no Ray or torch, so listing stays cheap."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    IntDistribution,
)

from trainables.foundation.choices import CHOICES
from trainables.foundation.config import parse_scalar
from trainables.foundation.errors import UsageError
from trainables.foundation.objectives import metric_name, objectives_of
from trainables.foundation.pins import numeric_choices, refuse_unbuildable


@dataclass(frozen=True)
class Space:
    """What a search tunes: a model, its data, the searched hyperparameters and the metric."""

    name: str
    """Short name, as given to `space=`."""
    description: str
    """One line for `python -m search spaces`."""
    architecture: str
    """Model builder: a name in `trainables.models.MODELS`, or "path/to/file.py:function" / "module:function"."""
    dataset: str
    """A name in `trainables.data.DATASETS`, or "path/to/file.py:function" / "module:function" giving an `OwnData`."""
    hyperparameters: dict[str, BaseDistribution]
    """The searched hyperparameters as Optuna distributions."""
    model_args: Callable[[dict, Any], dict] | None = None
    """The builder's keyword arguments from (hyperparameters, DataInfo); default: in_channels and num_classes."""
    constants: dict[str, Any] = field(default_factory=dict)
    """Hyperparameters the training loop reads that are not searched (overridable with key=value)."""
    cost_hyperparameters: dict[str, BaseDistribution] = field(default_factory=dict)
    """Knobs that trade accuracy for cost (width, depth, image size), searched only when a second objective is asked;
    a name here may widen a searched hyperparameter's range, or search a constant."""
    metric: str = "val_acc"
    """The metric the search optimizes: val_acc, val_loss, val_f1 (macro F1), val_auc (two classes), or the space's own
    "file.py:function" / "module:function", called as function(logits, labels) -> float on the whole validation split
    and reported as val_<function> (trainables.metrics); once the space is made, `metric` holds the reported name."""
    mode: str = "max"
    """"max" or "min"."""
    loss: str = ""
    """The space's own loss instead of cross-entropy: "file.py:function" / "module:function", called as
    loss(logits, labels) -> scalar tensor (trainables.own_step)."""
    train_step: str = ""
    """The space's own training step: "file.py:function" / "module:function", called as train_step(model, images,
    labels) -> the batch's loss, a scalar tensor; the loop does backward and the optimizer's step."""
    own_metric: str = ""
    """Set from an own `metric="file.py:function"`: the function, whose figure `metric` names."""

    def __post_init__(self):
        if self.mode not in ("max", "min"):
            raise UsageError(f"space {self.name}: mode must be 'max' or 'min', not {self.mode!r}")
        if not self.own_metric and metric_name(self.metric, self.name) != self.metric:  # an own function's
            object.__setattr__(self, "own_metric", self.metric)
            object.__setattr__(self, "metric", metric_name(self.metric, self.name))
        overlap = set(self.hyperparameters) & set(self.constants)
        if overlap:
            raise UsageError(f"space {self.name}: {sorted(overlap)} are both searched and constant")

    def builder_args(self, hp: dict, info) -> dict:
        if self.model_args is not None:
            return self.model_args(hp, info)
        return {"in_channels": info.in_channels, "num_classes": info.num_classes}

    def hyperparameter_names(self) -> list[str]:
        return list(self.hyperparameters) + list(self.cost_hyperparameters) + list(self.constants)

    def for_objectives(self, count: int) -> Space:
        """The space a search of `count` objectives searches: with the cost knobs when there are several."""
        if count < 2 or not self.cost_hyperparameters:
            return self
        cost = self.cost_hyperparameters
        return dataclasses.replace(
            self,
            hyperparameters={**self.hyperparameters, **cost},
            constants={name: value for name, value in self.constants.items() if name not in cost},
        )


def coerce_hyperparameter(space: Space, key: str, text: str) -> Any:
    """Parse `key=text` for a hyperparameter of `space`, refusing what the model or the loop cannot build (`pins`)."""
    value = _parsed_pin(space, key, text)
    own = space.constants.get(key, space.cost_hyperparameters.get(key) or space.hyperparameters.get(key))
    refuse_unbuildable(key, text, value, own)
    return value


def _parsed_pin(space: Space, key: str, text: str) -> Any:
    if key in space.constants:
        return parse_scalar(key, text, type(space.constants[key]))
    dist = space.cost_hyperparameters.get(key) or space.hyperparameters[key]
    if isinstance(dist, CategoricalDistribution):
        for choice in dist.choices:
            if str(choice) == text:
                return choice
        kind = numeric_choices(dist)
        if kind is not None:
            return parse_scalar(key, text, kind)
        if text in CHOICES.get(key, ()):  # a name the loop builds (optimizer=adamw), though the space searches others
            return text
        allowed = ", ".join(str(c) for c in dist.choices)
        raise UsageError(f"{key}={text}: allowed values are {allowed}")
    if isinstance(dist, IntDistribution):
        return parse_scalar(key, text, int)
    return parse_scalar(key, text, float)


BUILTIN_PACKAGE = "spaces"


def builtin_space_names() -> list[str]:
    """The modules of the `spaces` package that define a SPACE."""
    package = importlib.import_module(BUILTIN_PACKAGE)
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_"))


def load_space(ref: str) -> Space:
    """Resolve `space=` : a built-in name, a path to a .py file, or a dotted module name."""
    if ref.endswith(".py") or "/" in ref:
        module = _import_file(Path(ref))
    elif ref in builtin_space_names():
        module = importlib.import_module(f"{BUILTIN_PACKAGE}.{ref}")
    elif "." in ref:
        try:
            module = importlib.import_module(ref)
        except ImportError as exc:
            raise UsageError(f"space={ref}: cannot import module ({exc})") from None
    else:
        known = ", ".join(builtin_space_names())
        raise UsageError(f"space={ref}: unknown space; known spaces: {known} (or a path to a .py file)")
    return _space_of(module, ref)


def load_run_space(run) -> Space:
    """The space a run searches: its `space=`, with the cost knobs when the run has several objectives."""
    space = load_space(run.space)
    return space.for_objectives(len(objectives_of(run, space)))


def _import_file(path: Path):
    if not path.is_file():
        raise UsageError(f"space={path}: no such file")
    spec = importlib.util.spec_from_file_location(f"user_space_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except UsageError:
        raise
    except Exception as exc:  # the user's module: say what broke, in one line
        raise UsageError(f"space={path}: the module failed to load: {type(exc).__name__}: {exc}") from None
    return module


REQUIRED = "name, description, architecture, dataset, hyperparameters"


def _space_of(module, ref: str) -> Space:
    space = getattr(module, "SPACE", None)
    if space is None:
        raise UsageError(f"space={ref}: the module defines no SPACE; add SPACE = spaces.Space({REQUIRED}, ...)")
    if not isinstance(space, Space):
        raise UsageError(f"space={ref}: SPACE is a {type(space).__name__}, not a spaces.Space({REQUIRED}, ...)")
    for key, dist in space.hyperparameters.items():
        if not isinstance(dist, BaseDistribution):
            raise UsageError(f"space={ref}: hyperparameter {key} must be an optuna distribution, not {dist!r}")
    return _builder_beside(space, getattr(module, "__file__", None))


def _builder_beside(space: Space, module_file: str | None) -> Space:
    """A model builder named by a relative file path ("net.py:net") is read from the space module's folder, as
    `dataset=` and `loss=` are: every process (a trial's runs in another working directory) and an export find it
    there; a file missing there is refused before the search, naming where it was looked for."""
    location, _, function = space.architecture.rpartition(":")
    if not module_file or not location.endswith(".py") or Path(location).expanduser().is_absolute():
        return space
    beside = Path(module_file).resolve().parent / location
    return dataclasses.replace(space, architecture=f"{beside}:{function}")
