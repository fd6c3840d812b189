"""The TorchTrainer each trial driver fits, less what this project does not use."""

from __future__ import annotations

from ray.train.torch import TorchTrainer
from ray.train.v2._internal.callbacks.datasets import DatasetsCallback


class TrialTrainer(TorchTrainer):
    """A TorchTrainer without Ray Data's DatasetManager: Train starts that actor (a process importing Ray Data) for
    every run, datasets or not, and this project's workers read their data themselves. One process fewer to start
    per trial."""

    def _create_default_callbacks(self):
        return [c for c in super()._create_default_callbacks() if not isinstance(c, DatasetsCallback)]
