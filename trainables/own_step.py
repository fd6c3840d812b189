"""A space's own loss or training step, in place of the built-in cross-entropy; validation stays the same."""

from __future__ import annotations

import functools
from collections.abc import Callable

from trainables.foundation.errors import UsageError
from trainables.own_refs import own_function


def training_step(space, space_ref: str = "") -> Callable | None:
    """(model, images, labels) -> loss for the space's own loss or step; None: the built-in cross-entropy."""
    if space.loss and space.train_step:
        raise UsageError(
            f"space {space.name}: loss= and train_step= are both given; give one (a train_step computes its own loss)"
        )
    if space.train_step:
        return own_function("train_step", space.train_step, space_ref)
    if space.loss:
        return functools.partial(loss_step, own_function("loss", space.loss, space_ref))
    return None


def loss_step(loss: Callable, model, images, labels):  # module-level: a partial of it pickles
    return loss(model(images), labels)


def check_training_step(space, run, dataset, hp: dict) -> None:
    """Preflight: the space's own step, on 2 random images, must give a finite scalar loss with a gradient."""
    step = training_step(space, run.space)
    if step is None:
        return
    import torch

    from trainables.models import model_for

    key, ref = ("train_step", space.train_step) if space.train_step else ("loss", space.loss)
    info = dataset.info(run.data.root, hp)
    torch.manual_seed(run.seed)
    images = torch.randn(2, *info.shape)
    labels = torch.tensor([0, min(1, info.num_classes - 1)])
    model = model_for(space, hp, info).train()
    try:
        loss = step(model, images, labels)
    except UsageError:
        raise
    except Exception as exc:  # the user's function: say what broke, in one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise UsageError(
            f"{key}={ref}: on 2 images of the data's shape it raised {type(exc).__name__}: {first}"
        ) from None
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        what = f"a tensor of shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor) else type(loss).__name__
        raise UsageError(f"{key}={ref}: returned {what}; expected the batch's loss as a scalar tensor (e.g. .mean())")
    if not loss.requires_grad:
        raise UsageError(f"{key}={ref}: its loss does not depend on the model's parameters (no gradient)")
    if not torch.isfinite(loss.detach()):
        raise UsageError(f"{key}={ref}: returned {loss.item()} on 2 images; expected a finite loss")
