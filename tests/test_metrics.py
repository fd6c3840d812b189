"""A space's metric beyond val_acc and val_loss (trainables.metrics): the built-in macro F1 and ROC AUC against figures
worked out by hand, a space's own function found from the space's folder, the shares of a DDP trial's validation split
gathered whole, and what is refused before Ray starts. The whole chain (ASHA, study, summary, TensorBoard, export, the
test figure) runs in tests/test_own_space_e2e.py's search."""

import json
import math
import socket
import subprocess
import sys
from datetime import timedelta

import pytest
import torch

from search.__main__ import main
from tests.conftest import REPO
from trainables.foundation.space import Space, load_space
from trainables.metrics import gather_rows, macro_f1, metric_functions, roc_auc


def one_hot(predicted: list[int], classes: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(predicted), classes).float()


def test_macro_f1_is_the_mean_of_each_classes_f1():
    labels = torch.tensor([0, 0, 1, 1, 2, 2])
    logits = one_hot([0, 1, 1, 1, 2, 0], 3)
    # class 0: TP 1, FP 1, FN 1 -> 2/4; class 1: TP 2, FP 1, FN 0 -> 4/5; class 2: TP 1, FP 0, FN 1 -> 2/3
    assert macro_f1(logits, labels) == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)
    assert macro_f1(one_hot([1, 1, 1, 1], 3), torch.tensor([0, 0, 1, 1])) == pytest.approx((0 + 2 / 3) / 2)  # no 2


def test_roc_auc_is_the_chance_a_positive_outranks_a_negative_ties_counting_half():
    scores = torch.tensor([0.9, 0.4, 0.4, 0.4, 0.1])  # positives 0.9, 0.4, 0.4; negatives 0.4, 0.1
    labels = torch.tensor([1, 1, 1, 0, 0])
    logits = torch.stack([torch.zeros(5), scores], dim=1)
    # pairs won: 0.9 beats both (2), each 0.4 ties 0.4 (0.5) and beats 0.1 (1): 5 of 6
    assert roc_auc(logits, labels) == pytest.approx(5 / 6)
    assert roc_auc(logits + 3.0, labels) == pytest.approx(5 / 6)  # the log-odds: a shift of both logits is none
    assert math.isnan(roc_auc(logits, torch.ones(5, dtype=torch.int64)))  # no negative: undefined
    with pytest.raises(ValueError, match="two classes"):
        roc_auc(torch.zeros(5, 3), labels)


SPACE = """
from optuna.distributions import FloatDistribution
from torch import nn

from spaces import Space


def net(in_channels, num_classes):
    return nn.Sequential(nn.Flatten(), nn.Linear(in_channels * 4 * 4, num_classes))


SPACE = Space(
    name="scored",
    description="a space with a metric of its own",
    architecture=__file__ + ":net",
    dataset="my_data.py:data",
    metric="METRIC",
    hyperparameters={"lr": FloatDistribution(0.01, 0.1, log=True)},
    constants={"batch_size": 8},
)
"""

DATA = """
import numpy as np

from spaces import OwnData


def data(root, seed):
    images = np.random.default_rng(seed).integers(0, 256, (40, 1, 4, 4), dtype=np.uint8)
    return OwnData(train=(images, np.arange(40) % 3), class_names=["a", "b", "c"])


def recall_of_a(logits, labels):
    BODY
"""


def own_space(tmp_path, metric: str, body: str = "return float((logits.argmax(1)[labels == 0] == 0).float().mean())"):
    """A space file and, beside it, its data and metric file (named relative to the space's folder)."""
    folder = tmp_path / "mine"
    folder.mkdir(exist_ok=True)
    (folder / "my_data.py").write_text(DATA.replace("BODY", body))
    space = folder / "my_space.py"
    space.write_text(SPACE.replace("METRIC", metric))
    return space


class Run:
    """What metric_functions reads of a RunConfig."""

    def __init__(self, space: str, objectives: str = ""):
        self.space, self.objectives = space, objectives


def test_an_own_metric_is_read_from_the_space_folder_and_reported_as_val_function(tmp_path, monkeypatch):
    path = own_space(tmp_path, "my_data.py:recall_of_a")
    monkeypatch.chdir(tmp_path)  # not the space's folder: a trial's process runs in its own
    space = load_space(str(path))
    assert (space.metric, space.own_metric) == ("val_recall_of_a", "my_data.py:recall_of_a")
    functions = metric_functions(space, Run(str(path)))
    logits, labels = one_hot([0, 1, 0, 2], 3), torch.tensor([0, 0, 1, 2])
    assert list(functions) == ["val_recall_of_a"] and functions["val_recall_of_a"](logits, labels) == 0.5


def test_built_in_metrics_are_computed_only_when_asked():
    space = Space("s", "d", "a.py:net", "b.py:data", {}, metric="val_f1")
    assert list(metric_functions(space, Run("s"))) == ["val_f1"]
    plain = Space("s", "d", "a.py:net", "b.py:data", {})
    assert metric_functions(plain, Run("s")) == {}  # val_acc and val_loss: the loop's own sums, no logits kept
    assert list(metric_functions(plain, Run("s", "val_acc,val_auc"))) == ["val_auc"]  # a second objective


@pytest.mark.parametrize(
    "metric, fragment",
    [
        ("val_f2", "metric=val_f2 is unknown; accepted: val_acc, val_loss, val_f1, val_auc, or your own "),
        ("my_data.py:acc", "metric=my_data.py:acc would report as val_acc, a built-in figure; rename it"),
    ],
)
def test_an_unknown_metric_is_refused_in_one_line_writing_nothing(capsys, tmp_path, metric, fragment):
    storage = tmp_path / "runs"
    space = own_space(tmp_path, metric)
    code = main(["run", f"space={space}", f"storage={storage}", "trials=2", "epochs=1", "--dry-run"])  # every check
    out, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err, (out, err)
    assert not storage.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


@pytest.mark.parametrize(
    "metric, body, error",
    [
        ("val_auc", "pass", "metric val_auc (ROC AUC) takes two classes; scored's data has 3: use val_f1"),
        ("my_data.py:recall", "pass", "metric=my_data.py:recall: my_data.py defines no recall; it defines data, "),
        ("my_data.py:recall_of_a", "return logits", "metric=my_data.py:recall_of_a: returned a tensor of shape (8, 3)"),
        ("my_data.py:recall_of_a", "return labels[9]", "it raised IndexError: index 9 is out of bounds"),
    ],
)
def test_a_metric_that_cannot_work_is_refused_by_the_dry_run(capsys, tmp_path, metric, body, error):
    storage = tmp_path / "runs"
    space = own_space(tmp_path, metric, body)
    code = main(["run", f"space={space}", f"storage={storage}", "trials=2", "epochs=1", "--dry-run"])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1 and error in err, err
    assert not storage.exists()


RANK_1 = """
import json, sys
from datetime import timedelta

import torch

from trainables.metrics import gather_rows

torch.distributed.init_process_group("gloo", init_method=sys.argv[1], rank=1, world_size=2, timeout=timedelta(0, 120))
shares = gather_rows(torch.zeros((0, 0))), gather_rows(torch.zeros(0, dtype=torch.int64))  # none of the samples
torch.distributed.destroy_process_group()
print(json.dumps([share.tolist() for share in shares]))
"""


def test_every_rank_gets_every_share_of_the_split_an_empty_one_included():
    """Two ranks of a real gloo group: this process with 3 samples, and a child process (torch and trainables.metrics
    alone) with none, as when a split is smaller than the group; shares of unequal length are what all_gather pads."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    init = f"tcp://127.0.0.1:{port}"
    child = subprocess.Popen([sys.executable, "-c", RANK_1, init], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        torch.distributed.init_process_group(
            "gloo", init_method=init, rank=0, world_size=2, timeout=timedelta(minutes=2)
        )
        try:
            logits, labels = torch.arange(6, dtype=torch.float32).view(3, 2), torch.tensor([7, 8, 9])
            here = [gather_rows(logits).tolist(), gather_rows(labels).tolist()]
        finally:
            torch.distributed.destroy_process_group()
        there = json.loads(child.communicate(timeout=120)[0])
    finally:
        child.kill()
        child.wait()
    expected = [[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], [7, 8, 9]]
    assert here == expected and there == expected, (here, there)
