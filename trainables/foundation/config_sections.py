"""The sections of a search's configuration (`data.*`, `model.*`, `tracking.*`); docstrings are `--help` lines."""

from __future__ import annotations

from dataclasses import dataclass, field

from trainables.foundation.cache import cache_folder
from trainables.foundation.errors import UsageError


def require(condition: bool, message: str) -> None:
    if not condition:
        raise UsageError(message)


def default_data_root() -> str:
    return str(cache_folder("datasets"))


@dataclass
class DataConfig:
    root: str = field(default_factory=default_data_root)
    """Folder holding the dataset in torchvision's layout (e.g. MNIST/raw/...)."""
    limit: int = 0
    """Cap on training samples, for quick runs (0: all)."""
    val_limit: int = 0
    """Cap on validation samples (0: all)."""
    val_fraction: float = 0.1
    """Share of the training split held out for validation (IDX datasets; seeded, stratified by class)."""
    download: bool = True
    """Download a missing dataset into data.root (needs internet)."""
    workers: int = 2
    """DataLoader processes decoding images (image-folder spaces)."""
    strict: bool = False
    """Fail when an image cannot be decoded (default: report and skip it)."""
    skip: list = field(default_factory=list, metadata={"cli": False})
    """Unreadable images found before the search started, left out of every trial."""

    def __post_init__(self):
        require(self.limit >= 0, f"data.limit={self.limit}: must be >= 0 (0 means all samples)")
        require(self.val_limit >= 0, f"data.val_limit={self.val_limit}: must be >= 0 (0 means all samples)")
        require(
            0 < self.val_fraction < 1,
            f"data.val_fraction={self.val_fraction:g}: must be between 0 and 1 "
            "(the share of the training split held out for validation)",
        )
        require(self.workers >= 0, f"data.workers={self.workers}: must be >= 0 (0: decode in the training process)")


@dataclass
class ModelConfig:
    weights: str = ""
    """Pretrained weights: a local state_dict file, loaded into every layer of matching shape."""


TRACKERS = ("none", "mlflow")


@dataclass
class TrackingConfig:
    to: str = field(default="none", metadata={"bare": True})
    """Experiment tracker that records the search and each trial as it runs: none, or mlflow (pip install mlflow)."""
    uri: str = ""
    """MLflow tracking URI: http://host:port or sqlite:///path (default: a SQLite store in <experiment>/mlflow/)."""
    experiment: str = ""
    """MLflow experiment the search's runs go to (default: the space's name)."""

    def __post_init__(self):
        require(self.to in TRACKERS, f"tracking={self.to}: allowed values are {', '.join(TRACKERS)}")
