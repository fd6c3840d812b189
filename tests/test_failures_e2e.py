"""Failures a user meets, named on the terminal: a space whose training code raises, running out of memory."""

import json

import pytest

from tests.conftest import MNIST_MINI
from tests.e2e_helpers import run_cli

pytestmark = pytest.mark.e2e

SPACE_TEMPLATE = """
from optuna.distributions import FloatDistribution
import torch
from torch import nn

from trainables.foundation.space import Space


class Broken(nn.Module):
    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.fc = nn.Linear(in_channels * 28 * 28, num_classes)

    def forward(self, x):
        {forward}


SPACE = Space(
    name="broken",
    description="a space whose training code fails",
    architecture=__file__ + ":Broken",
    dataset="mnist",
    hyperparameters={{"lr": FloatDistribution(0.01, 0.1, log=True)}},
    constants={{"optimizer": "sgd", "batch_size": 64}},
)
"""


def run_space(tmp_path, forward: str, *keys: str):
    space_file = tmp_path / "broken_space.py"
    space_file.write_text(SPACE_TEMPLATE.format(forward=forward))
    result = run_cli(
        "run",
        f"space={space_file}",
        f"data.root={MNIST_MINI}",
        f"storage={tmp_path}",
        "name=f",
        "epochs=1",
        "data.limit=128",
        "data.val_limit=64",
        *keys,
    )
    return result, json.loads((tmp_path / "f" / "summary.json").read_text())


def test_a_space_whose_code_raises_names_the_error_and_exits_1(tmp_path, mnist_root):
    result, summary = run_space(tmp_path, 'raise ValueError("the model of this space is broken")', "trials=2")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    cause = "ValueError: the model of this space is broken"
    assert [t["error"] for t in summary["trials"]] == [cause, cause]
    for trial in summary["trials"]:  # the live view: the root cause and where the whole traceback is
        assert f"trial {trial['trial_id']} failed: {cause}" in result.stdout
        assert f"see {tmp_path / 'f' / ('trial_' + trial['trial_id'])}/error.txt" in result.stdout
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: no trial produced a checkpoint: every trial failed; the first, trial ")
    assert last.endswith(f"{cause} (see {tmp_path / 'f' / ('trial_' + summary['trials'][0]['trial_id'])}/error.txt)")


def test_running_out_of_memory_is_named_with_what_to_lower(tmp_path, mnist_root):
    huge = "return self.fc(x.flatten(1)) + torch.empty(1 << 44, dtype=torch.uint8).sum()"  # 16 TiB
    result, summary = run_space(tmp_path, huge, "trials=1")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    (trial,) = summary["trials"]
    assert trial["status"] == "failed"
    assert trial["error"].startswith("OutOfMemory: out of memory on cpu at batch_size=64: lower batch_size"), trial
    assert "OutOfMemory: out of memory on cpu" in result.stderr.strip().splitlines()[-1]
