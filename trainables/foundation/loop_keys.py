"""The hyperparameters the training loop reads in every space, with their types, pinnable with `key=value`."""

from __future__ import annotations

from trainables.foundation.choices import CHOICES
from trainables.foundation.config import parse_scalar
from trainables.foundation.errors import UsageError
from trainables.foundation.pins import refuse_unbuildable

LOOP_KEYS: dict[str, type] = {
    "optimizer": str,
    "lr_schedule": str,
    "momentum": float,
    "nesterov": bool,
    "weight_decay": float,
    "label_smoothing": float,
    "shift": int,
    "rotate": float,
}


def parse_loop_key(key: str, text: str):
    """`key=text` for a training-loop key: its type, and one of its named choices where it has them."""
    value = parse_scalar(key, text, LOOP_KEYS[key])
    if key in CHOICES and value not in CHOICES[key]:
        raise UsageError(f"{key}={text}: allowed values are {', '.join(CHOICES[key])}")
    refuse_unbuildable(key, text, value)  # momentum in [0, 1), weight_decay >= 0, ...
    return value
