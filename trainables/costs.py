"""What a model costs for a multi-objective search: `params`, `macs` (half of torch's FLOPs), `latency_ms`."""

from __future__ import annotations

import statistics
import time

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


def one_image(info, device: torch.device) -> torch.Tensor:
    """One example of the data's shape (a DataInfo's; a plain record of in_channels and image_size: square)."""
    shape = getattr(info, "shape", None) or (info.in_channels, info.image_size, info.image_size)
    return torch.zeros(1, *shape, device=device)


def counted_costs(model: nn.Module, info) -> dict:
    """`params` and `macs` of `model` (on the CPU, before training: they do not change with it)."""
    was_training = model.training
    model.eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(one_image(info, next(model.parameters()).device))
    model.train(was_training)
    return {"params": sum(p.numel() for p in model.parameters()), "macs": counter.get_total_flops() // 2}


def latency(model: nn.Module, info, repeats: int = 50, warmup: int = 5) -> dict:
    """`latency_ms` and `latency_iqr_ms` of one image's forward pass on the model's device."""
    device = next(model.parameters()).device
    image = one_image(info, device)
    was_training = model.training
    model.eval()
    times = []
    with torch.no_grad():
        for number in range(warmup + repeats):
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            started = time.perf_counter()
            model(image)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if number >= warmup:
                times.append((time.perf_counter() - started) * 1000)
    model.train(was_training)
    quartiles = statistics.quantiles(times, n=4)
    # two significant figures: finer differences are noise, which would split the Pareto front
    median = float(f"{statistics.median(times):.2g}")
    return {"latency_ms": median, "latency_iqr_ms": quartiles[2] - quartiles[0]}
