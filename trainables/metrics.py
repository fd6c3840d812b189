"""Validation figures beyond the loop's accuracy and loss: macro F1 (`val_f1`), two-class ROC AUC (`val_auc`) and a
space's own metric (`metric="file.py:function"`, reported as val_<function>). Each is computed from the logits and
labels of the whole validation split: in a DDP trial every rank evaluates its share, and the shares are gathered so
that every rank computes the same figure on every sample. Plain torch (no scikit-learn)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.distributed as dist

from trainables.foundation.errors import UsageError
from trainables.foundation.objectives import objectives_of
from trainables.own_refs import own_function


def macro_f1(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """The mean over classes of each class's F1 (2 TP / (2 TP + FP + FN)) of the argmax's predictions; the classes
    averaged are those among the labels or the predictions (scikit-learn's f1_score(average="macro"))."""
    predicted = logits.argmax(dim=1)
    classes = torch.unique(torch.cat([labels, predicted]))
    if len(classes) == 0:
        return math.nan
    scores = []
    for c in classes:
        true, guessed = labels == c, predicted == c
        hits = (true & guessed).sum().item()
        scores.append(2 * hits / (true.sum().item() + guessed.sum().item()))
    return sum(scores) / len(scores)


def roc_auc(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """The area under the ROC curve of class 1 against class 0, scored by logit 1 - logit 0 (the log-odds, so the same
    ranking as the softmax's probability): the chance that a random positive outranks a random negative, ties counting
    half (Mann-Whitney U). NaN when the split lacks one of the two classes."""
    if logits.dim() != 2 or logits.shape[1] != 2:
        raise ValueError(f"val_auc takes two classes; the logits have shape {tuple(logits.shape)}")
    scores = (logits[:, 1].double() - logits[:, 0].double()).cpu()
    positive = labels.cpu() == 1
    positives, negatives = int(positive.sum()), int((~positive).sum())
    if positives == 0 or negatives == 0:
        return math.nan
    values, inverse, counts = torch.unique(scores, sorted=True, return_inverse=True, return_counts=True)
    ends = counts.cumsum(0).double()  # the 1-based rank of each distinct value's last sample
    average_rank = ends - (counts.double() - 1) / 2  # tied samples share the mean of their ranks
    rank_sum = average_rank[inverse][positive].sum().item()
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


BUILT_IN: dict[str, Callable] = {"val_f1": macro_f1, "val_auc": roc_auc}
LOOP = ("val_acc", "val_loss")  # summed over the batches by trainables.training.evaluate


def metric_functions(space, run) -> dict[str, Callable]:
    """The figures a run reports beyond val_acc and val_loss, by reported name: its space's metric and any other of
    its objectives that is one (val_f1 as a second objective)."""
    names = [space.metric] + [objective.name for objective in objectives_of(run, space)]
    functions = {}
    for name in dict.fromkeys(names):
        if name in BUILT_IN:
            functions[name] = BUILT_IN[name]
        elif name == space.metric and space.own_metric:
            functions[name] = own_function("metric", space.own_metric, run.space)
    return functions


def figures(functions: dict[str, Callable], logits: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    """Each function's figure on (logits [N, classes] float32, labels [N] int64), both on the CPU."""
    logits, labels = logits.detach().float().cpu(), labels.detach().cpu()
    return {name: float(function(logits, labels)) for name, function in functions.items()}


def gather_rows(tensor: torch.Tensor) -> torch.Tensor:
    """Every rank's rows of `tensor` (shares whose lengths differ, an empty one included), on every rank, in rank
    order; the tensor itself outside a process group. Padded to the longest share: all_gather wants equal sizes."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return tensor
    world = dist.get_world_size()
    shape = torch.tensor([tensor.shape[0], *tensor.shape[1:]], device=tensor.device, dtype=torch.int64)
    shapes = [torch.zeros_like(shape) for _ in range(world)]
    dist.all_gather(shapes, shape)
    longest, rest = int(max(s[0] for s in shapes)), [int(size) for size in torch.stack(shapes).max(dim=0).values[1:]]
    padded = torch.zeros((longest, *rest), dtype=tensor.dtype, device=tensor.device)
    padded[tuple(slice(0, size) for size in tensor.shape)] = tensor
    parts = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(parts, padded)
    return torch.cat([part[: int(s[0])] for part, s in zip(parts, shapes)])


def validation_figures(functions: dict[str, Callable], val_stats: dict, finite: bool) -> dict[str, float]:
    """The figures of the whole validation split from this rank's `evaluate(..., keep=True)`; NaN for each when the
    epoch diverged (`finite` False: no function is called on NaN logits). Every rank takes part in the gathering."""
    if not functions:
        return {}
    logits, labels = gather_rows(val_stats["logits"]), gather_rows(val_stats["labels"])
    if not finite:
        return dict.fromkeys(functions, math.nan)
    return figures(functions, logits, labels)


def check_metric(space, run, dataset, hp: dict) -> None:
    """Preflight: the space's own metric is found (from the space's folder) and gives a number on 8 random logits of
    the data's classes; val_auc is asked only of two classes."""
    functions = metric_functions(space, run)
    info = dataset.info(run.data.root, hp)
    if "val_auc" in functions and info.num_classes != 2:
        raise UsageError(
            f"metric val_auc (ROC AUC) takes two classes; {space.name}'s data has {info.num_classes}: "
            "use val_f1, val_acc or a function of your own"
        )
    if not space.own_metric:
        return
    classes = info.num_classes
    logits = torch.randn(8, classes, generator=torch.Generator().manual_seed(run.seed))
    labels = torch.arange(8) % classes
    try:
        value = functions[space.metric](logits, labels)
    except UsageError:
        raise
    except Exception as exc:  # the user's function: say what broke, in one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise UsageError(
            f"metric={space.own_metric}: on 8 random logits of {classes} classes it raised {type(exc).__name__}: "
            f"{first}"
        ) from None
    if not is_number(value):
        what = f"a tensor of shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__
        raise UsageError(f"metric={space.own_metric}: returned {what}; expected function(logits, labels) -> a number")


def is_number(value) -> bool:
    """A float, an int, a numpy scalar or a one-element tensor; not a bool, not a string."""
    if isinstance(value, (bool, str, bytes)):
        return False
    if isinstance(value, torch.Tensor) and value.numel() != 1:
        return False
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True
