"""Real processes, real signals: a Train worker killed mid-trial, a search driver killed and resumed."""

import json
import os
import re
import shutil
import signal
import time

import pytest

from tests.conftest import MNIST_MINI
from tests.e2e_helpers import (
    descendants,
    gated_space,
    kill_pids,
    process_title,
    result_rows,
    run_cli,
    start_search,
    uri_bytes,
    uri_text,
    wait_for_line,
)

pytestmark = pytest.mark.e2e

# stem=imagenet: the tutorial's cheaper 7x7 stem (a third of the small stem's compute) and batch_size=128 (1.8x the
# images/s of batch 32 with that stem on one core); these tests are about processes and signals, not the model
COMMON = [
    "space=resnet_mnist",
    f"data.root={MNIST_MINI}",
    "data.val_limit=200",
    "seed=3",
    "stem=imagenet",
    "batch_size=128",
]
RECIPE = {"lr": 0.06, "weight_decay": 0.0005, "label_smoothing": 0.1, "shift": 3}  # resnet_mnist's, at batch 128 here
DDP = "workers=2"  # a Ray Train worker group; without it, a trial on these 2 cores trains in its own trial process


def search_with_killed_workers(tmp_path) -> dict:
    """A one-trial search of 2-worker DDP trials (max_failures=1) whose first worker is SIGKILLed after epoch 1 and
    again after the restarted run's epoch 2 (each run's workers held before their second epoch's report:
    e2e_helpers.GATE, whose `hold` stays: the second kill fails the trial); returns the trial's summary entry. The
    search's processes get a temporary folder of their own (Ray's stays in /tmp), which must be left without
    checkpoint files: a killed trial once left one there (86 MB) each time."""
    log = tmp_path / "cli.log"
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    space, hold = gated_space(tmp_path)
    env = {**os.environ, "TMPDIR": str(temporary), "RAY_TMPDIR": "/tmp"}
    process = start_search(
        log,
        space,
        *COMMON[1:],
        DDP,
        f"storage={tmp_path}",
        "name=w",
        "trials=1",
        "epochs=3",
        "data.limit=1024",
        "max_failures=1",  # trials=1: asha=auto stops, never pauses a lone trial, so both kills are one run's
        env=env,
    )
    try:
        killed: list[int] = []
        for epoch in (1, 2):
            wait_for_line(log, rf"epoch {epoch}/3", process)
            workers = [p for p in descendants(process.pid) if "ray::RayTrainWorker" in process_title(p)]
            workers = [p for p in workers if p not in killed]
            assert len(workers) == 2, [process_title(p) for p in descendants(process.pid)]
            kill_pids(workers[:1])
            killed += workers
        # exit 0 either way: a failed trial's last checkpoint still counts as a result
        assert process.wait(timeout=600) == 0, log.read_text()[-3000:]
    finally:
        hold.unlink(missing_ok=True)
        if process.poll() is None:
            kill_pids([process.pid, *descendants(process.pid)])
    assert not list(temporary.rglob("*.pt")), sorted(map(str, temporary.rglob("*.pt")))
    (trial,) = json.loads((tmp_path / "w" / "summary.json").read_text())["trials"]
    return trial


def test_a_killed_ddp_worker_restarts_the_group_from_its_checkpoint_and_a_second_kill_fails_the_trial(
    tmp_path, mnist_root
):
    """max_failures=1: the first kill restarts the worker group from epoch 1's checkpoint; the second is beyond the
    bound, and the trial fails with the cause."""
    trial = search_with_killed_workers(tmp_path)
    assert trial["status"] == "failed" and trial["epochs_run"] == 2, trial
    assert trial["error"].startswith("WorkerDied: a training worker process (pid "), trial["error"]
    rows = result_rows(tmp_path / "w", trial["trial_id"])
    assert [row["epoch"] for row in rows] == [1, 2]
    assert rows[0]["resumed_from"] == 0 and rows[1]["resumed_from"] == 1  # continued from epoch 1's checkpoint


def test_resume_refuses_a_folder_that_is_not_an_experiment(tmp_path):
    result = run_cli("resume", str(tmp_path))
    assert result.returncode == 2 and "not an experiment folder" in result.stderr


def test_on_s3_a_killed_trial_process_restarts_from_its_checkpoint_and_the_search_grows_from_the_uri_alone(
    tmp_path, mnist_root, s3_bucket
):
    """One-worker trials, in their trial processes (the Ctrl-C test below stops a DDP group), on storage at a URI.
    The first trial's process is SIGKILLed after its first epoch: the trial restarts from that epoch's checkpoint,
    read back from the URI (max_failures=1), and finishes, leaving no checkpoint file in the temporary folder. The
    finished search then grows by one trial from the URI alone (local working folder deleted). Ctrl-C, a time
    budget and resume on S3: tests/test_one_writer.py."""
    experiment = f"{s3_bucket}/runs/s"
    log = tmp_path / "run.log"
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    space, hold = gated_space(tmp_path)
    process = start_search(
        log,
        space,
        *COMMON[1:],
        "workers=1",
        f"storage={s3_bucket}/runs",
        "name=s",
        "trials=2",
        "epochs=2",
        "grace=2",
        "concurrency=1",
        "data.limit=512",
        "max_failures=1",
        "tracking=mlflow",
        env={**os.environ, "TMPDIR": str(temporary), "RAY_TMPDIR": "/tmp"},
    )
    try:
        first = wait_for_line(log, r"(?m)^\s+(\w{8})\s+epoch 1/2", process).group(1)
        trial_processes = [p for p in descendants(process.pid) if "ray::ImplicitFunc" in process_title(p)]
        assert len(trial_processes) == 1, [process_title(p) for p in descendants(process.pid)]
        kill_pids(trial_processes)
        hold.unlink()  # the restarted run, and the next trial in a trial process kept for it, go on
        assert process.wait(timeout=300) == 0, log.read_text()[-3000:]
    finally:
        hold.unlink(missing_ok=True)
        if process.poll() is None:
            kill_pids([process.pid, *descendants(process.pid)])
    assert not list(temporary.rglob("*.pt")), sorted(map(str, temporary.rglob("*.pt")))
    first_rows = uri_text(f"{experiment}/trial_{first}/result.json")
    rows = [json.loads(line) for line in first_rows.splitlines()]
    assert [row["epoch"] for row in rows] == [1, 2], rows
    assert rows[0]["resumed_from"] == 0 and rows[1]["resumed_from"] == 1, rows  # continued from epoch 1's checkpoint
    assert rows[0]["pid"] != rows[1]["pid"], "epoch 2 ran in the killed trial process"
    summary = json.loads(uri_text(f"{experiment}/summary.json"))
    assert [t["status"] for t in summary["trials"]] == ["completed", "completed"]
    trial_runs = {f"trial_{t['trial_id']}": ("FINISHED", [1, 2]) for t in summary["trials"]}
    assert mlflow_runs(experiment, tmp_path) == {"s": ("FINISHED", [2]), **trial_runs}  # one parent, each epoch once

    # moved: the experiment copied to another place on the store and the old one deleted (as runs/ brought from a
    # cluster): it grows and exports from where it is
    experiment = move_uri_folder(experiment, f"{s3_bucket}/elsewhere/s")
    # grown by one trial, from the URI alone: proposed with the study's two trials known, one summary over all three
    shutil.rmtree(tmp_path / "cache")  # as on another machine
    grown = run_cli("resume", experiment, "trials=3")
    assert grown.returncode == 0, grown.stdout[-3000:] + grown.stderr[-3000:]
    assert "search: 1 of 3 trials (2 done before)" in grown.stdout
    summary = json.loads(uri_text(f"{experiment}/summary.json"))
    assert len(summary["trials"]) == 3 and summary["run"]["trials"] == 3
    assert uri_text(f"{experiment}/trial_{first}/result.json") == first_rows, "a finished trial ran again"
    trial_runs = {f"trial_{t['trial_id']}": ("FINISHED", [1, 2]) for t in summary["trials"]}
    assert mlflow_runs(experiment, tmp_path) == {"s": ("FINISHED", [2, 3]), **trial_runs}  # its best after 2, then 3
    assert all(t["checkpoint"].startswith("train_") for t in summary["trials"]), summary["trials"]  # relative
    exported = run_cli("export", experiment, f"out={tmp_path / 'model'}")
    assert exported.returncode == 0 and (tmp_path / "model" / "model.safetensors").is_file(), exported.stderr


def move_uri_folder(source: str, target: str) -> str:
    """Every object under `source` copied under `target`, then `source` deleted."""
    import pyarrow.fs

    from trainables.foundation.storage import filesystem

    fs, source_path = filesystem(source)
    _, target_path = filesystem(target)
    pyarrow.fs.copy_files(source_path, target_path, fs, fs)
    fs.delete_dir(source_path)
    return target


def mlflow_runs(experiment: str, tmp_path) -> dict:
    """{run name: (status, steps logged)} in the MLflow store the search keeps at a URI, read with MLflow's client
    from a copy: the metric's steps (e2e_helpers.GATED_SPACE's gated_acc) for a trial's run, its best's for the
    search's."""
    from mlflow.tracking import MlflowClient

    copy = tmp_path / f"mlflow-{time.monotonic_ns()}.db"
    copy.write_bytes(uri_bytes(f"{experiment}/mlflow/mlflow.db"))
    client = MlflowClient(f"sqlite:///{copy}")
    found = client.search_runs([client.get_experiment_by_name("gated_mnist").experiment_id])
    runs = {}
    for run in found:
        metric = "val_gated_acc" if run.info.run_name.startswith("trial_") else "best_val_gated_acc"
        steps = [m.step for m in client.get_metric_history(run.info.run_id, metric)]
        runs[run.info.run_name] = (run.info.status, steps)
    return runs


def test_ddp_trials_share_one_trial_process_an_asha_stop_frees_its_workers_and_ctrl_c_stops_cleanly(
    tmp_path, mnist_root
):
    """Tune hands a DDP trial's process to the next trial, also after ASHA stopped it mid-run: the stop aborts the
    trial's Ray Train run (its controller and workers) so that the process is free at once. Ctrl-C after the third
    trial's first epoch then stops the search: exit 130, the resume command printed, no summary, the local Ray
    instance shut down."""
    log = tmp_path / "cli.log"
    # the smallest lr first (val_acc 0.6 after one epoch of 2,048 digits), then the recipe's 0.06, whose one-cycle
    # peak leaves it near chance after that epoch (0.1): ASHA's rung stops the second on any host (seeded random
    # proposals beat each other by luck, and then none is stopped)
    given = tmp_path / "given.json"
    given.write_text(json.dumps([{**RECIPE, "lr": 0.005}, RECIPE]))
    process = start_search(
        log,
        *COMMON,
        DDP,
        f"storage={tmp_path}",
        "name=d",
        "trials=4",
        "epochs=2",
        "grace=1",
        "asha=stop",  # a trial below the rung's cutoff ends stopped_early at once (the promotion variant pauses it)
        "concurrency=1",
        "data.limit=2048",
        "sampler=random",
        f"enqueue={given}",
    )
    try:
        stopped = wait_for_line(log, r"trial (\w+) finished: stopped_early", process).group(1)
        # the third trial's first epoch, recorded from the same trial process; a fourth is still to come
        wait_for_line(log, r"(?s)(epoch 1/2.*){3}", process)
        ray_pids = descendants(process.pid)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=120) == 130, log.read_text()[-3000:]
    finally:
        if process.poll() is None:
            kill_pids([process.pid, *descendants(process.pid)])
    output = log.read_text()
    assert not re.search(r"trial \w+ (failed:|finished: failed)", output), output[-3000:]  # as the live view says it
    assert f"python -m search resume {tmp_path / 'd'}" in output
    assert not (tmp_path / "d" / "summary.json").exists()
    trial_ids = [path.parent.name.removeprefix("trial_") for path in (tmp_path / "d").glob("trial_*/result.json")]
    assert stopped in trial_ids and len(trial_ids) >= 3, trial_ids
    pids = {row["pid"] for trial_id in trial_ids for row in result_rows(tmp_path / "d", trial_id)}
    assert len(pids) == 1, f"{len(pids)} trial processes for {len(trial_ids)} trials"
    deadline = time.monotonic() + 20  # ray.shutdown() returns while its processes are still exiting
    while (
        leftover := {pid: process_title(pid) for pid in ray_pids if process_title(pid)}
    ) and time.monotonic() < deadline:
        time.sleep(0.5)
    kill_pids(list(leftover))
    assert leftover == {}, "the local Ray instance must be shut down"
