"""A space of one's own through the whole chain: its own model and data (spaces/examples/digits8x8.py: scikit-learn's
bundled 8x8 digits, no download) and its own loss in a file beside the space, named by a relative path that every
trial's process (in another working directory) reads from the space's folder. One search on one local Ray, then
`export` and `predict`; the contract's refusals are tests/test_own_space.py's."""

import json
import struct

import numpy as np
import pytest

from tests.conftest import REPO
from tests.e2e_helpers import run_cli

pytestmark = pytest.mark.e2e

EXAMPLE = REPO / "spaces" / "examples" / "digits8x8.py"
OFFSET = 10.0  # the own loss is cross-entropy + OFFSET: the same gradients, and a train_loss no other loss reports

SPACE = f"""
from optuna.distributions import FloatDistribution

from spaces import Space

SPACE = Space(
    name="own_digits",
    description="the example's model and data, a loss of its own",
    architecture="{EXAMPLE}:small_cnn",
    dataset="{EXAMPLE}:digits",
    loss="losses.py:offset_cross_entropy",
    hyperparameters={{"lr": FloatDistribution(0.003, 0.03, log=True)}},
    constants={{"optimizer": "adam", "batch_size": 64}},
)
"""

LOSSES = f"""
import torch.nn.functional as F


def offset_cross_entropy(logits, labels):
    return F.cross_entropy(logits, labels) + {OFFSET}
"""


def test_own_data_and_loss_search_export_and_predict(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "own_digits.py").write_text(SPACE)
    (folder / "losses.py").write_text(LOSSES)
    storage = tmp_path / "runs"
    result = run_cli(
        "run", f"space={folder / 'own_digits.py'}", f"storage={storage}", "name=own", "trials=2", "epochs=2"
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    experiment = storage / "own"
    summary = json.loads((experiment / "summary.json").read_text())
    best = summary["best"]
    assert best["test_samples"] == 400 and best["test_acc"] > 0.5, best  # the function's own test split
    rows = [json.loads(line) for path in experiment.glob("trial_*/result.json") for line in path.open()]
    assert rows and all(row["train_loss"] > OFFSET > row["val_loss"] for row in rows), rows  # trained on the own loss
    assert all(row["train_samples"] + row["val_samples"] == 1397 for row in rows)  # val held out of train

    exported = run_cli("export", str(experiment))
    assert exported.returncode == 0 and "verified: val_acc=" in exported.stdout, exported.stdout + exported.stderr
    meta = json.loads((experiment / "export" / "model.json").read_text())
    assert (meta["input"]["channels"], meta["input"]["height"], meta["class_names"][9]) == (1, 8, "9")
    assert meta["preprocessing"] == {"resize": [8, 8]}

    from sklearn.datasets import load_digits

    digits = load_digits()
    images = np.round(digits.images[-400:] * (255 / 16)).astype(np.uint8)
    idx = tmp_path / "test-digits-idx3-ubyte"
    idx.write_bytes(b"\x00\x00\x08\x03" + struct.pack(">III", *images.shape) + images.tobytes())
    predicted = run_cli("predict", str(experiment / "export"), str(idx), "--json")
    assert predicted.returncode == 0, predicted.stderr
    classes = [p["class"] for p in json.loads(predicted.stdout)]
    accuracy = float(np.mean(np.array(classes) == digits.target[-400:]))
    assert abs(accuracy - best["test_acc"]) <= 1 / 400 + 1e-9, (accuracy, best["test_acc"])
