"""The test split, evaluated once at the end of a search on the best checkpoint: a figure no choice was made on (the
search sees only the validation split; the test files are read here and nowhere else)."""

from __future__ import annotations

import dataclasses

from trainables.foundation.config import RunConfig
from trainables.foundation.space import Space
from trainables.foundation.storage import Experiment


def test_accuracy(best: dict, run: RunConfig, space: Space, experiment: Experiment) -> dict | None:
    """{"test_acc", "test_samples"} of the best checkpoint, and the space's metric on the test split when it is another
    (`test_f1` for val_f1, `test_<function>` for an own one), or None when the dataset has no test split."""
    import torch

    from trainables.data import get_dataset
    from trainables.feeds import make_feed
    from trainables.metrics import figures, metric_functions
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
    functions = {name: f for name, f in metric_functions(space, run).items() if name == space.metric}
    stats = evaluate(model, feed.test_batches(), cpu, keep=bool(functions))
    count = max(stats["count"], 1)
    found = {"test_acc": stats["correct"].item() / count, "test_samples": stats["count"]}
    if space.metric == "val_loss":
        found["test_loss"] = stats["loss_sum"].item() / count
    for name, value in (figures(functions, stats["logits"], stats["labels"]) if functions else {}).items():
        found["test_" + name.removeprefix("val_")] = value
    return found
