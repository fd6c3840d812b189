"""A real search on a real local Ray instance, through the CLI, as a user runs it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from search.space import load_space
from trainables.data import MNIST
from trainables.training import Split, evaluate, load_model_weights, shard_indices
from tests.conftest import REPO

pytestmark = pytest.mark.e2e

WORKERS = 2
VAL_LIMIT = 400


def run_search(log_path: Path, *args: str) -> subprocess.CompletedProcess:
    """Run `python -m search run ...`, with everything it prints in a log file."""
    with open(log_path, "w") as log:
        return subprocess.run(
            [sys.executable, "-m", "search", "run", *args],
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, text=True, timeout=900,
        )


def ray_processes_of(session_dir: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if session_dir in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def session_dir_of(experiment: Path) -> str:
    for line in (experiment / "search.log").read_text().splitlines():
        if "started a local Ray instance, session" in line:
            return line.rsplit(" ", 1)[-1]
    raise AssertionError("search.log does not name the Ray session")


@pytest.fixture(scope="module")
def search(tmp_path_factory):
    from tests.conftest import MNIST_MINI

    if not (MNIST_MINI / "MNIST" / "raw").is_dir():
        pytest.skip("../shared/datasets/mnist-mini is missing")
    storage = tmp_path_factory.mktemp("runs")
    log = storage / "cli.log"
    result = run_search(
        log, "space=resnet_mnist", f"data.root={MNIST_MINI}", f"storage={storage}", "name=e2e",
        "trials=6", "epochs=4", "grace=1", f"workers={WORKERS}", "data.limit=256", f"data.val_limit={VAL_LIMIT}",
        "seed=1",
    )
    output = log.read_text()
    assert result.returncode == 0, output[-4000:]
    experiment = storage / "e2e"
    return {"experiment": experiment, "output": output, "summary": json.loads((experiment / "summary.json").read_text())}


def test_summary_has_every_trial(search):
    summary = search["summary"]
    assert summary["space"] == "resnet_mnist" and summary["metric"] == "val_acc" and summary["mode"] == "max"
    assert len(summary["trials"]) == 6
    for trial in summary["trials"]:
        assert trial["status"] in ("completed", "stopped_early"), trial
        assert {"trial_id", "config", "epochs_run", "val_acc"} <= set(trial)
        assert set(trial["config"]) >= {"lr", "momentum", "weight_decay", "batch_size"}
    values = [t["val_acc"] for t in summary["trials"]]
    assert values == sorted(values, reverse=True)


def test_every_epoch_reports_the_required_metrics(search):
    for trial in search["summary"]["trials"]:
        lines = (search["experiment"] / f"trial_{trial['trial_id']}" / "result.json").read_text().splitlines()
        rows = [json.loads(line) for line in lines]
        assert [r["epoch"] for r in rows] == list(range(1, trial["epochs_run"] + 1))
        for row in rows:
            for key in ("epoch", "train_loss", "val_loss", "val_acc", "lr", "images_per_s", "epoch_s"):
                assert isinstance(row[key], (int, float)), (key, row)
            assert row["val_samples"] == VAL_LIMIT and row["train_samples"] == 256


def test_asha_stopped_a_trial_early(search):
    stopped = [t for t in search["summary"]["trials"] if t["status"] == "stopped_early"]
    assert stopped and all(t["epochs_run"] < 4 for t in stopped)


def test_best_is_the_best_epoch_of_the_best_trial(search):
    summary, experiment = search["summary"], search["experiment"]
    best = summary["best"]
    assert best["trial_id"] == summary["trials"][0]["trial_id"]
    rows = [json.loads(line) for line in (experiment / f"trial_{best['trial_id']}" / "result.json").read_text().splitlines()]
    best_row = max(rows, key=lambda r: r["val_acc"])
    assert best["metrics"]["val_acc"] == best_row["val_acc"]
    assert best["epoch"] == best_row["epoch"]
    assert Path(best["checkpoint"]).is_dir()
    assert Path(best["checkpoint"]).name == f"checkpoint_epoch_{best['epoch']:04d}"
    assert "best checkpoint: " + best["checkpoint"] in search["output"]


def test_best_checkpoint_reproduces_reported_val_acc(search):
    best = search["summary"]["best"]
    space = load_space("resnet_mnist")
    model = space.build_model(best["config"])
    load_model_weights(best["checkpoint"], model)  # torch.load(weights_only=True)
    from tests.conftest import MNIST_MINI

    images, labels = MNIST.load(MNIST_MINI, train=False, limit=VAL_LIMIT)
    split = Split.from_arrays(images, labels, MNIST.mean, MNIST.std, torch.device("cpu"))
    torch.set_num_threads(1)
    shards = [evaluate(model, split, shard_indices(len(split), rank, WORKERS, None)) for rank in range(WORKERS)]
    accuracy = sum(s["correct"] for s in shards).item() / len(split)
    assert accuracy == pytest.approx(best["metrics"]["val_acc"], abs=1.5 / len(split))


def test_cli_shut_its_ray_instance_down(search):
    session = session_dir_of(search["experiment"])
    assert ray_processes_of(session) == []


def test_diverging_trials_fail_with_reason_and_the_search_goes_on(tmp_path, mnist_root):
    result = run_search(
        tmp_path / "cli.log", "space=resnet_mnist", f"data.root={mnist_root}", f"storage={tmp_path}", "name=nan",
        "trials=2", "epochs=2", "workers=2", "data.limit=128", "data.val_limit=100", "lr=10000",
    )
    output = (tmp_path / "cli.log").read_text()
    assert result.returncode == 1, output[-3000:]
    assert "error: no trial produced a checkpoint" in output
    summary = json.loads((tmp_path / "nan" / "summary.json").read_text())
    assert summary["best"] is None
    assert [t["status"] for t in summary["trials"]] == ["failed", "failed"]
    assert all("non-finite" in t["error"] for t in summary["trials"])
    assert all(t["config"]["lr"] == 10000 for t in summary["trials"])
