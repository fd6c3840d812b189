"""What a model and an export need to know about a dataset. No torch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DataInfo:
    """What a model and an export need to know about the data. `sizes`: one example's sizes past its channels,
    (H, W) for images or (L,) for sequences; empty for square images of side `image_size` (the built-in datasets)."""

    class_names: tuple[str, ...]
    in_channels: int
    image_size: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    sizes: tuple[int, ...] = ()

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def shape(self) -> tuple[int, ...]:
        """One example's shape: (C, H, W), or (C, L) for sequences."""
        return (self.in_channels, *(self.sizes or (self.image_size, self.image_size)))
