"""The test split, evaluated once at the end of a search on the best checkpoint: a figure no choice was made on (the
search sees only the validation split; the test files are read here and nowhere else)."""

from __future__ import annotations

import dataclasses
import os
import sys

from trainables.foundation.config import RunConfig
from trainables.foundation.space import Space
from trainables.foundation.storage import Experiment


def import_ahead() -> None:
    """Import what `test_accuracy` needs (torch: 1.4 s on 2 cores) in a thread of the lowest priority while the trials
    run, so that the search's end does not wait for it."""
    import threading

    def imports() -> None:
        if sys.platform.startswith("linux"):  # Linux alone gives a thread a niceness of its own
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        import trainables.feeds
        import trainables.models
        import trainables.training  # noqa: F401

    threading.Thread(target=imports, name="import-ahead", daemon=True).start()


def test_accuracy(best: dict, run: RunConfig, space: Space, experiment: Experiment) -> dict | None:
    """{"test_acc", "test_samples"} of the best checkpoint, or None when the dataset has no test split."""
    import torch

    from trainables.data import get_dataset
    from trainables.feeds import make_feed
    from trainables.models import model_for
    from trainables.training import evaluate, load_model_weights

    dataset = get_dataset(space.dataset, run)
    if not dataset.has_test_split(run.data.root):
        return None
    hp = best["config"]
    model = model_for(space, hp, dataset.info(run.data.root, hp))
    load_model_weights(experiment.local_checkpoint(best["checkpoint"]), model)  # weights_only=True
    cpu = torch.device("cpu")
    run = dataclasses.replace(run, data=dataclasses.replace(run.data, workers=0))  # decode in this process
    feed = make_feed(space, run, hp, 0, 1, cpu, skip=run.data.skip)
    stats = evaluate(model, feed.test_batches(), cpu)
    return {"test_acc": stats["correct"].item() / max(stats["count"], 1), "test_samples": stats["count"]}
