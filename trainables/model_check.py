"""Preflight of a space's model: its builder found, given only the arguments it takes, built, and run on two examples
of the data's shape; each mistake refused in one line naming it, before Ray starts (a dry run included)."""

from __future__ import annotations

import inspect

from trainables.foundation.errors import UsageError
from trainables.own_refs import own_function

SHIPPED = ("resnet18", "resnet50", "cnn", "mlp")  # trainables.models.MODELS' names, known here without torch


def shipped_arguments(space) -> bool:
    """The builder's arguments are the project's own: none given, or a shipped space's `model_args` (the tests build
    every shipped space, tests/test_spaces.py)."""
    from trainables.foundation.space import BUILTIN_PACKAGE, builtin_space_names

    module = getattr(space.model_args, "__module__", None)
    return space.model_args is None or module in {f"{BUILTIN_PACKAGE}.{name}" for name in builtin_space_names()}


def builder_of(space, space_ref: str = ""):
    """The builder function `space.architecture` names: a built-in name, or a file's or module's function (a relative
    file from the space's folder), refused in one line naming what the file defines."""
    from trainables.models import MODELS

    if space.architecture in MODELS:
        return MODELS[space.architecture]
    if ":" not in space.architecture:
        raise UsageError(
            f"architecture={space.architecture}: unknown; known: {', '.join(MODELS)} or 'path/to/file.py:function'"
        )
    return own_function("architecture", space.architecture, space_ref)


def refuse_unknown_arguments(space, builder, args: dict) -> None:
    """`model_args` gives only arguments the builder takes, and every one it needs."""
    try:
        parameters = inspect.signature(builder).parameters
    except (TypeError, ValueError):  # a builtin without a signature: the build below says what is wrong
        return
    takes = [name for name, p in parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    named = f"architecture={space.architecture}: {getattr(builder, '__name__', 'the builder')}()"
    if not any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
        unknown = [key for key in args if key not in takes]
        if unknown:
            raise UsageError(
                f"{named} takes no {', '.join(unknown)} (given by model_args); it takes {', '.join(takes) or 'nothing'}"
            )
    named_kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    needed = [n for n, p in parameters.items() if p.default is p.empty and p.kind in named_kinds and n not in args]
    if needed:
        given = ", ".join(args) or "nothing"
        raise UsageError(f"{named} needs {', '.join(needed)}, which model_args does not give (it gives {given})")


def check_model(space, space_ref: str, hp: dict, info) -> None:
    """Build the space's model with `hp` and run it on 2 examples of the data's shape, on the CPU. A built-in builder
    on a built-in dataset has its arguments checked only: the shipped spaces are built by the tests, and building
    ResNet-50 and running it on 224-pixel images would add seconds to every dry run (the meta device's shapes-only
    run costs as much again in imports, 3 s, the first time)."""
    if space.architecture in SHIPPED and ":" not in space.dataset and shipped_arguments(space):
        return  # a shipped builder given a shipped space's arguments on shipped data: no torch import for the checks
    import torch

    from trainables.models import MODELS

    builder = builder_of(space, space_ref)
    try:
        args = space.builder_args(hp, info)
    except UsageError:
        raise
    except Exception as exc:  # the user's model_args: say what broke, in one line
        raise UsageError(f"space {space.name}: model_args(hp, data) raised {_one_line(exc)}") from None
    refuse_unknown_arguments(space, builder, args)
    refuse_image_moves(space, hp, info)
    if space.architecture in MODELS and ":" not in space.dataset:  # both built in (a space's own data: "file:fn")
        return
    where = f"architecture={space.architecture}"
    with torch.device("cpu"):  # a process's default device may be another
        try:
            model = builder(**args)
        except UsageError:
            raise
        except Exception as exc:  # the user's builder: say what broke, in one line
            raise UsageError(f"{where}: building it with {_arguments(args)} raised {_one_line(exc)}") from None
        if not isinstance(model, torch.nn.Module):
            raise UsageError(f"{where}: returned a {type(model).__name__}; expected an nn.Module")
        examples = torch.zeros(2, *info.shape)
        try:
            with torch.no_grad():
                logits = model.eval()(examples)
        except Exception as exc:  # the model does not take the data's shape: say so, in one line
            raise UsageError(
                f"{where}: on 2 examples of the data's shape {'x'.join(map(str, info.shape))} it raised "
                f"{_one_line(exc)}; give the builder what the data is (model_args)"
            ) from None
    wanted = (2, info.num_classes)
    if not isinstance(logits, torch.Tensor) or tuple(logits.shape) != wanted:
        what = f"shape {tuple(logits.shape)}" if isinstance(logits, torch.Tensor) else f"a {type(logits).__name__}"
        raise UsageError(
            f"{where}: on 2 examples of the data's shape {'x'.join(map(str, info.shape))} it returned {what}; "
            f"expected logits of shape {wanted} (one per class)"
        )


def refuse_image_moves(space, hp: dict, info) -> None:
    """`shift` and `rotate` move images [N, C, H, W]: on sequences [N, C, L] they are refused, not ignored."""
    if len(info.shape) != 2:
        return
    for key in ("shift", "rotate"):
        if key in space.hyperparameters or hp.get(key):
            raise UsageError(
                f"{key}={hp.get(key)}: shifts and rotations move images [N, C, H, W], and this data is sequences "
                f"[N, C, L] ({'x'.join(map(str, info.shape))}); give {key}=0 (or leave {key} out of the space)"
            )


def _arguments(args: dict) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in args.items())


def _one_line(exc: Exception) -> str:
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}"
