"""Failures a user meets, named on the terminal: a space whose training code raises, running out of memory,
training that diverges. One search of three given trials, one failing each way."""

import json

import pytest

from tests.conftest import MNIST_MINI
from tests.e2e_helpers import event_data, run_cli

pytestmark = pytest.mark.e2e

BROKEN_SPACE = """
from optuna.distributions import CategoricalDistribution, FloatDistribution
import torch
from torch import nn

from trainables.foundation.space import Space


class Broken(nn.Module):
    def __init__(self, in_channels, num_classes, failure):
        super().__init__()
        self.fc = nn.Linear(in_channels * 28 * 28, num_classes)
        self.failure = failure

    def forward(self, x):
        if not self.training:  # the builder's check before Ray runs it in eval mode: the failures are training's
            return self.fc(x.flatten(1))
        if self.failure == "raise":
            raise ValueError("the model of this space is broken")
        if self.failure == "diverge":
            return self.fc(x.flatten(1)) * float("nan")
        return self.fc(x.flatten(1)) + torch.empty(1 << 44, dtype=torch.uint8).sum()  # 16 TiB


SPACE = Space(
    name="broken",
    description="a space whose training code fails",
    architecture=__file__ + ":Broken",
    model_args=lambda hp, data: {
        "in_channels": data.in_channels, "num_classes": data.num_classes, "failure": hp["failure"]
    },
    dataset="mnist",
    hyperparameters={"lr": FloatDistribution(0.01, 0.1, log=True),
                     "failure": CategoricalDistribution(["raise", "out_of_memory", "diverge"])},
    constants={"optimizer": "sgd", "batch_size": 64},
)
"""


def test_trials_that_raise_run_out_of_memory_or_diverge_name_each_cause_and_the_search_exits_1(tmp_path):
    space_file = tmp_path / "broken_space.py"
    space_file.write_text(BROKEN_SPACE)
    given = tmp_path / "given.json"
    given.write_text(
        json.dumps([{"lr": 0.05, "failure": failure} for failure in ("raise", "out_of_memory", "diverge")])
    )
    result = run_cli(
        "run",
        f"space={space_file}",
        f"data.root={MNIST_MINI}",
        f"storage={tmp_path}",
        "name=f",
        "trials=3",
        "epochs=1",
        "data.limit=128",
        "data.val_limit=64",
        f"enqueue={given}",
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads((tmp_path / "f" / "summary.json").read_text())
    errors = {t["config"]["failure"]: t["error"] for t in summary["trials"]}
    raised = "ValueError: the model of this space is broken"
    assert errors["raise"] == raised, errors
    assert errors["out_of_memory"].startswith("OutOfMemory: out of memory on cpu at batch_size=64: lower batch_size"), (
        errors
    )
    assert errors["diverge"].startswith("NonFiniteLoss: training diverged: the loss became non-finite at epoch 1")
    assert "lr=0.05" in errors["diverge"] and "failure=diverge" in errors["diverge"]  # named, with the hyperparameters
    for trial in summary["trials"]:  # the live view: the root cause, and where the whole traceback is
        assert f"trial {trial['trial_id']} failed: {trial['error'][:60]}" in result.stdout
        error_file = tmp_path / "f" / f"trial_{trial['trial_id']}" / "error.txt"
        # a loss that diverges at the last epoch: Tune ends the trial there, before its driver raises (no traceback)
        assert (f"see {error_file}" in result.stdout) == (trial["config"]["failure"] != "diverge")
        if error_file.is_file():  # plain text: Ray's colour codes taken out (search.running.ends.failures)
            assert "ray::" in error_file.read_text() and "\x1b" not in error_file.read_text()
        _, hparams = event_data(tmp_path / "f" / f"trial_{trial['trial_id']}")
        assert hparams["status"] == "failed"  # failed trials are in TensorBoard's HParams too
    first = summary["trials"][0]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: no trial produced a checkpoint: every trial failed; the first, trial ")
    assert first["error"][:60] in last
    assert last.endswith(f"(see {tmp_path / 'f' / ('trial_' + first['trial_id'])}/error.txt)")
