"""What a model and an export need to know about a dataset. No torch."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DataInfo:
    """What a model and an export need to know about the data."""

    class_names: tuple[str, ...]
    in_channels: int
    image_size: int
    mean: tuple[float, ...]
    std: tuple[float, ...]

    @property
    def num_classes(self) -> int:
        return len(self.class_names)
