"""A fused group: N models of one architecture stacked into one set of tensors and trained as one, each member with
its own learning rate, momentum, weight decay and dropout (torch.func's `stack_module_state`, `functional_call` and
`vmap`). Every member sees the same batches; its loss, gradients, BatchNorm statistics and optimizer state are its
own, so a member trains as the same configuration would alone (tests/test_fused.py).

The optimizer is SGD with momentum done on the stacked tensors, step for step `torch.optim.SGD` (dampening 0):
d = grad + weight_decay * p; buf = momentum * buf + d; d = d + momentum * buf when nesterov, else buf; p -= lr * d.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from trainables.data import MNIST
from trainables.foundation.space import load_space
from trainables.models import model_for


class MemberDropout(nn.Module):
    """nn.Dropout whose rate is a buffer, so that stacking gives each member its own (nn.Dropout's is a Python
    float, the same for every member of a stack). Under vmap(randomness="different") each member draws its own mask.
    Rate 0 passes the input through unchanged, as nn.Dropout does."""

    def __init__(self, p: float):
        super().__init__()
        self.register_buffer("p", torch.tensor(float(p)))

    def forward(self, x):
        if not self.training:
            return x
        keep = torch.rand_like(x) >= self.p
        return x * keep / (1 - self.p).clamp_min(1e-12)


def with_member_dropout(model: nn.Module) -> nn.Module:
    """The model with every nn.Dropout replaced by a MemberDropout of the same rate."""
    for name, child in model.named_children():
        if isinstance(child, nn.Dropout):
            setattr(model, name, MemberDropout(child.p))
        else:
            with_member_dropout(child)
    return model


def product_model(space_name: str, hp: dict) -> nn.Module:
    """The space's model for these hyperparameters (and the space's constants), built as a trial builds it."""
    space = load_space(space_name)
    return model_for(space, {**space.constants, **hp}, MNIST.info("", hp))


def member_setting(hp: dict, name: str) -> float:
    return float(hp.get(name, 0.0))


class FusedGroup:
    """N members (models of one architecture, already initialised, and their hyperparameters) trained as one."""

    def __init__(self, models: list[nn.Module], hps: list[dict], device: torch.device):
        models = [with_member_dropout(copy.deepcopy(model)).to(device) for model in models]
        self.size, self.device = len(models), device
        self.params, self.buffers = stack_module_state(models)  # params are leaves that require grad
        self.base = copy.deepcopy(models[0]).to("meta")  # the architecture only; the tensors come from the stack

        def per_member(values: list[float]) -> torch.Tensor:
            return torch.tensor(values, device=device, dtype=torch.float32)

        self.lr = per_member([hp["lr"] for hp in hps])
        self.momentum = per_member([member_setting(hp, "momentum") for hp in hps])
        self.weight_decay = per_member([member_setting(hp, "weight_decay") for hp in hps])
        self.nesterov = per_member(
            [float(bool(hp.get("nesterov")) and member_setting(hp, "momentum") > 0) for hp in hps]
        )
        self.velocity = {name: torch.zeros_like(p) for name, p in self.params.items()}
        self.train()

    def train(self, mode: bool = True) -> None:
        self.base.train(mode)

    def _one(self, params, buffers, images):
        return functional_call(self.base, (params, buffers), (images,))

    def logits(self, images: torch.Tensor) -> torch.Tensor:
        """[members, batch, classes]: every member on the same images."""
        return vmap(self._one, in_dims=(0, 0, None), randomness="different")(self.params, self.buffers, images)

    def losses(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Each member's mean cross-entropy on the batch: [members]."""
        logits = self.logits(images)
        flat = F.cross_entropy(logits.flatten(0, 1), labels.repeat(self.size), reduction="none")
        return flat.view(self.size, -1).mean(dim=1)

    def step(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """One SGD step of every member; returns their losses before it, detached. The members are independent, so
        the gradient of the losses' sum with respect to a member's weights is that member's own gradient."""
        losses = self.losses(images, labels)
        names = list(self.params)
        grads = torch.autograd.grad(losses.sum(), [self.params[name] for name in names])
        with torch.no_grad():
            for name, grad in zip(names, grads):
                self._update(self.params[name], grad, self.velocity[name])
        return losses.detach()

    def _update(self, param: torch.Tensor, grad: torch.Tensor, velocity: torch.Tensor) -> None:
        shape = (self.size,) + (1,) * (param.dim() - 1)
        lr, momentum = self.lr.view(shape), self.momentum.view(shape)
        direction = grad + self.weight_decay.view(shape) * param
        velocity.mul_(momentum).add_(direction)
        direction = torch.where(self.nesterov.view(shape) > 0, direction + momentum * velocity, velocity)
        param.sub_(lr * direction)

    def member_state(self, index: int) -> dict[str, torch.Tensor]:
        """One member's weights and buffers, as its model's state_dict (what a trial's checkpoint would hold)."""
        tensors = {**self.params, **self.buffers}
        return {name: tensor[index].detach().clone() for name, tensor in tensors.items()}
