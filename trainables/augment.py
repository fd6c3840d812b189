"""Batch augmentations on the batch's device, one gather or one affine sample per batch (no Python per image)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def random_shifts(images: torch.Tensor, shift: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Every image of a batch [N, C, H, W] translated by its own random offset in [-shift, shift] (zeros come in)."""
    n, _, height, width = images.shape
    padded = torch.nn.functional.pad(images, (shift, shift, shift, shift))
    draw_on = generator.device if generator else "cpu"
    offsets = torch.randint(0, 2 * shift + 1, (2, n), generator=generator, device=draw_on).to(images.device)
    rows = (torch.arange(height, device=images.device)[None, :] + offsets[0][:, None])[:, None, :, None]
    cols = (torch.arange(width, device=images.device)[None, :] + offsets[1][:, None])[:, None, None, :]
    batch = torch.arange(n, device=images.device)[:, None, None, None]
    channel = torch.arange(images.shape[1], device=images.device)[None, :, None, None]
    return padded[batch, channel, rows, cols]


def random_rotations(images: torch.Tensor, degrees: float, shift: int, generator: torch.Generator | None = None):
    """Every image of a batch turned by its own random angle in [-degrees, degrees] and moved up to `shift` pixels."""
    n, _, height, width = images.shape
    draws = torch.rand((3, n), generator=generator, device=generator.device if generator else "cpu").to(images.device)
    angle = (draws[0] * 2 - 1) * math.radians(degrees)
    cos, sin = angle.cos(), angle.sin()
    # affine_grid works in [-1, 1] coordinates: a shift of one pixel is 2 / size
    tx, ty = (draws[1] * 2 - 1) * (2 * shift / width), (draws[2] * 2 - 1) * (2 * shift / height)
    theta = torch.stack([torch.stack([cos, -sin, tx], 1), torch.stack([sin, cos, ty], 1)], 1)
    grid = F.affine_grid(theta, list(images.shape), align_corners=False)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
