"""Storage trouble on a real local Ray instance: a checkpoint folder that disappears mid-search, damaged checkpoints
that `export` and `resume` refuse, and two searches started at once with one name."""

import json
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.e2e_helpers import descendants, kill_pids, run_cli, start_search, wait_for_line

pytestmark = pytest.mark.e2e

COMMON = ["space=resnet_mnist", "data.val_limit=200", "seed=3", "stem=imagenet", "batch_size=128", "workers=1"]


def test_a_checkpoint_that_cannot_be_written_fails_its_trial_and_keeps_the_others(tmp_path, mnist_root):
    log = tmp_path / "cli.log"
    process = start_search(
        log,
        *COMMON,
        f"data.root={mnist_root}",
        f"storage={tmp_path}",
        "name=d",
        "trials=2",
        "epochs=3",
        "grace=3",
        "concurrency=1",
        "data.limit=1024",
    )
    try:
        first = wait_for_line(log, r"(?m)^\s+(\w{8})\s+epoch 1/3", process).group(1)
        run_folder = tmp_path / "d" / f"train_{first}"
        shutil.rmtree(run_folder)
        run_folder.write_text("not a folder any more")  # the next checkpoint of this trial cannot be written
        assert process.wait(timeout=600) == 0, log.read_text()[-3000:]
    finally:
        if process.poll() is None:
            kill_pids([process.pid, *descendants(process.pid)])
    output = log.read_text()
    assert (
        f"trial {first} failed: trainables.checkpoints.CheckpointWriteFailed: "
        f"could not write the checkpoint of epoch 2 to {run_folder}" in output
    )
    summary = json.loads((tmp_path / "d" / "summary.json").read_text())
    statuses = {t["trial_id"]: t["status"] for t in summary["trials"]}
    assert statuses.pop(first) == "failed" and list(statuses.values()) == ["completed"], summary["trials"]
    assert summary["best"]["trial_id"] != first

    # export refuses a damaged checkpoint, naming the file, and picks no other
    best = summary["best"]["checkpoint"]
    model = f"{best}/model.pt"
    data = open(model, "rb").read()
    open(model, "wb").write(data[: len(data) // 3])
    exported = run_cli("export", str(tmp_path / "d"), f"out={tmp_path / 'model'}")
    assert exported.returncode == 2 and f"{model} is damaged: cut short" in exported.stderr, exported.stderr
    assert not (tmp_path / "model").exists()
    # resume refuses it too (an interrupted search: no summary.json), before Ray starts
    (tmp_path / "d" / "summary.json").unlink()
    resumed = run_cli("resume", str(tmp_path / "d"))
    assert resumed.returncode == 2 and f"{model} is damaged" in resumed.stderr, resumed.stderr
    assert "delete that folder" in resumed.stderr


def test_two_searches_started_at_once_with_one_name_one_runs_the_other_is_refused(tmp_path, mnist_root):
    args = [
        sys.executable,
        "-m",
        "search",
        "run",
        *COMMON,
        f"data.root={mnist_root}",
        f"storage={tmp_path}",
        "name=same",
        "trials=1",
        "epochs=1",
        "data.limit=256",
    ]
    both = [
        subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outcomes = [(p.wait(timeout=600), *p.communicate()) for p in both]
    codes = sorted(code for code, _, _ in outcomes)
    assert codes == [0, 2], outcomes
    refused = next(err for code, _, err in outcomes if code == 2)
    assert f"name=same: {tmp_path / 'same'} already exists; choose another name=" in refused
    summary = json.loads((tmp_path / "same" / "summary.json").read_text())
    assert [t["status"] for t in summary["trials"]] == ["completed"]
