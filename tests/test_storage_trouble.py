"""Storage trouble on a real local Ray instance, in one search of trials that train side by side: a checkpoint
folder that disappears mid-search, a second search with the same name, damaged checkpoints that `export` and
`resume` refuse."""

import json
import shutil

import pytest

from tests.e2e_helpers import descendants, gated_space, kill_pids, run_cli, start_search, wait_for_line

pytestmark = pytest.mark.e2e

COMMON = ["space=resnet_mnist", "data.val_limit=200", "seed=3", "stem=imagenet", "batch_size=128", "workers=1"]


def training_span(trial_dir) -> tuple[float, float]:
    rows = [json.loads(line) for line in (trial_dir / "result.json").read_text().splitlines()]
    return rows[0]["started_at"], rows[-1]["started_at"] + rows[-1]["epoch_s"]


def test_trials_train_side_by_side_one_whose_checkpoint_cannot_be_written_fails_and_the_others_finish(
    tmp_path, mnist_root
):
    """Four one-worker trials at half a CPU each train side by side (on 2 cores, two of them import torch while
    two wait for an import turn: trainables.foundation.import_turns). The run folder of the first to report an epoch is
    replaced by a file, so its next checkpoint cannot be written: that trial fails, naming the folder, and the others
    finish. Meanwhile a second search with the same name is refused in one line (the race of two started at once:
    test_storage.py). Then `export` and `resume` refuse the best checkpoint once it is damaged."""
    log = tmp_path / "cli.log"
    space, hold = gated_space(tmp_path)  # each trial held before its second epoch's checkpoint until `hold` goes
    args = [space, *COMMON[1:], f"data.root={mnist_root}", f"storage={tmp_path}", "name=d"]
    process = start_search(log, *args, "trials=4", "epochs=3", "grace=3", "cpus=0.5", "data.limit=512")
    try:
        first = wait_for_line(log, r"(?m)^\s+(\w{8})\s+epoch 1/3", process).group(1)
        run_folder = tmp_path / "d" / f"train_{first}"
        shutil.rmtree(run_folder)
        run_folder.write_text("not a folder any more")  # the next checkpoint of this trial cannot be written
        hold.unlink()
        second = run_cli("run", *args, "trials=1")
        assert second.returncode == 2, second.stdout[-2000:] + second.stderr[-2000:]
        assert second.stderr.strip().splitlines()[-1] == (
            f"error: name=d: {tmp_path / 'd'} already exists; choose another name="
        )
        assert process.wait(timeout=600) == 0, log.read_text()[-3000:]
    finally:
        hold.unlink(missing_ok=True)
        if process.poll() is None:
            kill_pids([process.pid, *descendants(process.pid)])
    output = log.read_text()
    assert "4 trials of gated_mnist, 4 at a time, 1 worker x 0.5 CPUs each" in output
    assert (
        f"trial {first} failed: trainables.checkpoints.CheckpointWriteFailed: "
        f"could not write the checkpoint of epoch 2 to {run_folder}" in output
    )
    summary = json.loads((tmp_path / "d" / "summary.json").read_text())
    statuses = {t["trial_id"]: t["status"] for t in summary["trials"]}
    assert statuses.pop(first) == "failed" and list(statuses.values()) == ["completed"] * 3, summary["trials"]
    assert summary["best"]["trial_id"] != first
    spans = {trial.name.removeprefix("trial_"): training_span(trial) for trial in (tmp_path / "d").glob("trial_*")}
    failed, finished = spans.pop(first), list(spans.values())
    assert len(finished) == 3
    assert max(start for start, _ in finished) < min(end for _, end in finished), spans  # the three trained at once
    assert any(start < failed[1] and failed[0] < end for start, end in finished), (failed, spans)  # and beside it

    # export refuses a damaged checkpoint, naming the file, and picks no other
    best = tmp_path / "d" / summary["best"]["checkpoint"]
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
