"""A space of one's own through the whole chain: its own model and data (spaces/examples/digits8x8.py: scikit-learn's
bundled 8x8 digits, no download, cut to 8 rows of 6 columns: images need not be square), its own loss and its own
metric in files beside the space, named by relative paths that every trial's process (in another working directory)
reads from the space's folder. One search on one local Ray, then `export` and `predict`; the contract's refusals are
tests/test_own_space.py's and tests/test_metrics.py's."""

import json
import struct

import numpy as np
import pytest

from tests.conftest import REPO
from tests.e2e_helpers import event_data, run_cli

pytestmark = pytest.mark.e2e

EXAMPLE = REPO / "spaces" / "examples" / "digits8x8.py"
COLUMNS = "1:7"  # the digits' 6 middle columns: the outer two hold little ink
OFFSET = 10.0  # the own loss is cross-entropy + OFFSET: the same gradients, and a train_loss no other loss reports

SPACE = """
from optuna.distributions import FloatDistribution

from spaces import Space

SPACE = Space(
    name="own_digits",
    description="the example's model and data, a loss of its own",
    architecture="wide.py:wide_cnn",
    dataset="wide.py:wide_digits",
    loss="losses.py:offset_cross_entropy",
    metric="scores.py:balanced_accuracy",
    hyperparameters={"lr": FloatDistribution(0.003, 0.03, log=True)},
    constants={"optimizer": "adam", "batch_size": 64},
)
"""

LOSSES = f"""
import torch.nn.functional as F


def offset_cross_entropy(logits, labels):
    return F.cross_entropy(logits, labels) + {OFFSET}
"""

SCORES = """
import torch


def balanced_accuracy(logits, labels):
    recalls = [(logits.argmax(1)[labels == c] == c).float().mean() for c in labels.unique()]
    return float(torch.stack(recalls).mean())
"""
METRIC = "val_balanced_accuracy"  # the own metric's name in every row, the study, the summary and TensorBoard


WIDE = f"""
import importlib.util

from torch import nn

spec = importlib.util.spec_from_file_location("digits8x8", "{EXAMPLE}")
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)


def wide_digits(root, seed):
    data = example.digits(root, seed)
    return data.__class__(
        train=(data.train[0][..., {COLUMNS}], data.train[1]),
        test=(data.test[0][..., {COLUMNS}], data.test[1]),
        class_names=data.class_names,
    )


def wide_cnn(in_channels, num_classes, width=16):
    net = example.small_cnn(in_channels, num_classes, width)
    net[-1] = nn.Linear(2 * width * 4 * 3, num_classes)  # 8x6 in, 4x3 after the max-pool
    return net
"""


def test_own_data_and_loss_search_export_and_predict(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "own_digits.py").write_text(SPACE)
    (folder / "losses.py").write_text(LOSSES)
    (folder / "wide.py").write_text(WIDE)
    (folder / "scores.py").write_text(SCORES)
    storage = tmp_path / "runs"
    result = run_cli(
        "run", f"space={folder / 'own_digits.py'}", f"storage={storage}", "name=own", "trials=2", "epochs=2"
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    experiment = storage / "own"
    summary = json.loads((experiment / "summary.json").read_text())
    best = summary["best"]
    assert best["test_samples"] == 400 and best["test_acc"] > 0.5, best  # the function's own test split
    assert summary["metric"] == METRIC and 0.5 < best["test_balanced_accuracy"] <= 1, best  # and the own metric there
    assert f"{METRIC}={best['metrics'][METRIC]:.4f} test_balanced_accuracy=" in result.stdout, result.stdout[-2000:]
    rows = [json.loads(line) for path in experiment.glob("trial_*/result.json") for line in path.open()]
    assert rows and all(row["train_loss"] > OFFSET > row["val_loss"] for row in rows), rows  # trained on the own loss
    assert all(row["train_samples"] + row["val_samples"] == 1397 for row in rows)  # val held out of train
    own_metric_is_the_searchs(experiment, summary)

    exported = run_cli("export", str(experiment))
    assert exported.returncode == 0 and f"verified: {METRIC}=" in exported.stdout, exported.stdout + exported.stderr
    meta = json.loads((experiment / "export" / "model.json").read_text())
    shape = (meta["input"]["channels"], meta["input"]["height"], meta["input"]["width"])
    assert (shape, meta["class_names"][9], meta["preprocessing"]) == ((1, 8, 6), "9", {"resize": [8, 6]})
    assert meta["metric"]["name"] == METRIC and meta["verified"]["reported"] == summary["best"]["metrics"][METRIC]

    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.ascontiguousarray(np.round(digits.images[-400:, :, 1:7] * (255 / 16)).astype(np.uint8))
    idx = tmp_path / "test-digits-idx3-ubyte"
    idx.write_bytes(b"\x00\x00\x08\x03" + struct.pack(">III", *images.shape) + images.tobytes())
    predicted = run_cli("predict", str(experiment / "export"), str(idx), "--json")
    assert predicted.returncode == 0, predicted.stderr
    classes = [p["class"] for p in json.loads(predicted.stdout)]
    accuracy = float(np.mean(np.array(classes) == digits.target[-400:]))
    assert abs(accuracy - best["test_acc"]) <= 1 / 400 + 1e-9, (accuracy, best["test_acc"])


def own_metric_is_the_searchs(experiment, summary) -> None:
    """Every epoch reports the own metric; the study (ASHA's and Optuna's record) scores each trial by it as the
    summary does, and each trial's TensorBoard events hold it per epoch."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = JournalStorage(JournalFileBackend(str(experiment / "study.log")))
    study = {t.user_attrs["trial_id"]: t for t in optuna.load_study(study_name="search", storage=storage).trials}
    for trial in summary["trials"]:
        rows = [json.loads(line) for line in (experiment / f"trial_{trial['trial_id']}" / "result.json").open()]
        assert study[trial["trial_id"]].intermediate_values == {row["epoch"]: row[METRIC] for row in rows}
        assert study[trial["trial_id"]].user_attrs["score"] == trial[METRIC] is not None
        events, _ = event_data(experiment / f"trial_{trial['trial_id']}")
        assert [event.value for event in events.Scalars(METRIC)] == pytest.approx([row[METRIC] for row in rows])
