"""A search on an existing multi-node Ray cluster: a head and a second node started here as separate Ray processes
(ray.cluster_utils), one CPU each, so a trial's two workers must land on two different nodes; the experiment lives
on a folder both nodes see (the shared storage)."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.e2e_helpers import descendants, kill_pids, run_cli, start_search, uri_files, uri_text, wait_for_line

pytestmark = pytest.mark.e2e

ONE_CPU = {"num_cpus": 1}


@contextlib.contextmanager
def started_two_nodes(**head_args):
    """Head + one more node on this machine (dashboard on 127.0.0.1); torn down, only these processes, also when a
    test fails. The nodes' processes inherit this process's environment."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={**ONE_CPU, "dashboard_host": "127.0.0.1", **head_args})
    try:
        second = cluster.add_node(**ONE_CPU)
        cluster.wait_for_nodes()
        yield cluster, second
    finally:
        cluster.shutdown()


@pytest.fixture
def two_nodes():
    with started_two_nodes() as nodes:
        yield nodes


def search_args(mnist_root, storage: Path, name: str, *extra: str) -> list[str]:
    return [
        "space=resnet_mnist",
        f"data.root={mnist_root}",
        f"storage={storage}",
        f"name={name}",
        "workers=2",
        "cpus=1",
        "data.limit=256",
        "data.val_limit=200",
        "lr=0.02",
        "momentum=0.9",
        "stem=imagenet",
        *extra,
    ]


def first_rows(experiment: Path) -> dict[str, dict]:
    rows = {}
    for trial_dir in experiment.glob("trial_*"):
        lines = (trial_dir / "result.json").read_text().splitlines() if (trial_dir / "result.json").exists() else []
        if lines:
            rows[trial_dir.name] = json.loads(lines[0])
    return rows


def test_a_lost_node_fails_its_trial_and_the_search_still_finishes(tmp_path, mnist_root, two_nodes):
    cluster, second = two_nodes
    shared = tmp_path / "cluster_storage"
    log = tmp_path / "cli.log"
    args = search_args(mnist_root, shared, "drill", "trials=2", "epochs=30", "grace=30", "max_failures=0")
    process = start_search(log, *args, env={**os.environ, "RAY_ADDRESS": cluster.address})
    experiment = shared / "drill"
    try:
        deadline = time.monotonic() + 300
        while not first_rows(experiment):  # a trial is training, with a worker on each node
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        second.kill_raylet()  # the second node goes away under a running trial
        assert process.wait(timeout=420) in (0, 1), log.read_text()[-3000:]  # finishes: no hang
    finally:
        if process.poll() is None:
            process.kill()

    summary = json.loads((experiment / "summary.json").read_text())
    statuses = [t["status"] for t in summary["trials"]]
    assert statuses == ["failed", "failed"], summary["trials"]
    first, second_trial = summary["trials"]
    assert first["epochs_run"] < 30 and first["error"]
    assert second_trial["error"]  # started on the one node left: refused or given up, with the reason recorded
    assert cluster.head_node.remaining_processes_alive()


def test_a_trial_no_set_of_nodes_holds_is_refused_and_one_that_finds_its_room_held_fails_instead_of_a_hang(
    tmp_path, mnist_root, two_nodes
):
    """Through address=auto, a trial bigger than the two nodes together is refused up front, leaving nothing behind.
    Then another job holds one of the cluster's two CPUs (as a leaked placement group would): each 2-worker trial
    waits for room for `room_wait` seconds while no trial of the search trains, then fails naming what is free."""
    import ray
    from ray.util.placement_group import placement_group

    shared = tmp_path / "cluster_storage"
    result = run_cli("run", *search_args(mnist_root, shared, "too-big", "workers=3", "address=auto"), timeout=300)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == (
        "error: workers=3 x (1 CPU): one trial needs 3 CPUs but the cluster has 2 CPUs and 0 GPUs on "
        "2 nodes; lower workers=, cpus= or gpus=, or add nodes; a shape that fits: workers=1 cpus=1 "
        "gpus=0"
    )
    assert not (shared / "too-big").exists()  # refused before anything was left behind

    cluster, _ = two_nodes
    ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    try:
        ray.get(placement_group([{"CPU": 1}]).ready(), timeout=60)
        started = time.monotonic()
        result = run_cli(
            "run",
            *search_args(
                mnist_root, tmp_path, "held", "trials=2", "epochs=1", "room_wait=5", f"address={cluster.address}"
            ),
            timeout=600,
        )
        elapsed = time.monotonic() - started
    finally:
        ray.shutdown()
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "error: no trial produced a checkpoint" in result.stderr
    summary = json.loads((tmp_path / "held" / "summary.json").read_text())
    assert [t["status"] for t in summary["trials"]] == ["failed", "failed"]
    for trial in summary["trials"]:
        assert "no room for 2 worker(s) x {'CPU': 1.0} for 5 s" in trial["error"], trial["error"]
        assert "free now: {'CPU': 1.0}" in trial["error"] and "outside this search" in trial["error"]
    assert elapsed < 300, f"the search took {elapsed:.0f} s"


def test_submitted_as_a_ray_job_a_search_on_s3_storage_spans_two_nodes_and_every_command_reads_it_back(
    tmp_path, mnist_root, s3_bucket
):
    """`ray job submit ... -- python -m search run ...` (docs/cluster.md): the search runs on the head node, joins the
    job's cluster and ships its own code to the nodes; its output and its failure come back through the job. (No
    `--working-dir` here: the two nodes on this one machine share one session folder, and the second node's agent
    deletes the job's working directory, the running search's cwd, when it has no use for it.) The experiment lives
    on S3 (a local endpoint): Ray Train writes the checkpoints from both nodes, and every reader works from the URI
    alone."""
    from search.results.tensorboard import free_port

    dashboard = free_port()
    runs = f"{s3_bucket}/runs"
    experiment = f"{runs}/on-s3"

    def submitted(*args: str) -> subprocess.Popen:
        job = [str(Path(sys.executable).parent / "ray"), "job", "submit", "--address", f"http://127.0.0.1:{dashboard}"]
        entrypoint = [*job, "--", sys.executable, "-m", "search", "run", *args]
        return subprocess.Popen(entrypoint, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    # after s3_bucket: the nodes' processes (and the jobs') inherit its AWS_* variables
    with started_two_nodes(include_dashboard=True, dashboard_port=dashboard) as (cluster, second):
        jobs = [  # side by side: the refused one needs no CPU
            submitted(*search_args(mnist_root, runs, "bad", f"data.root={tmp_path / 'nothing-here'}")),
            submitted(*search_args(mnist_root, runs, "on-s3", "trials=1", "epochs=2", "grace=2")),
        ]
        (refused, refused_output), (result, output) = [(job, job.communicate(timeout=600)[0]) for job in jobs]
        both_nodes = {cluster.head_node.node_id, second.node_id}
        assert cluster.remaining_processes_alive()
        # The project's code reached the nodes through the job's runtime_env (py_modules), not through this checkout.
        session = Path(cluster.head_node.get_session_dir_path())
        assert list((session / "runtime_resources").rglob("trainables/worker.py")), "trainables was not shipped"
    # Checked on the cluster (the search's preflight), the one line reaches the job's submitter.
    assert refused.returncode == 1, refused_output[-2000:]  # a failed job: `ray job submit` exits 1, whatever the code
    assert f"error: data.root={tmp_path / 'nothing-here'}" in refused_output
    assert result.returncode == 0, output[-3000:]
    assert "1 trial of resnet_mnist, 1 at a time" in output and "best checkpoint:" in output  # streamed back
    assert f"results: {experiment}" in output and f"summary: {experiment}/summary.json" in output

    files = uri_files(experiment)
    assert not [f for f in uri_files(runs) if f.startswith("bad/")]  # refused before anything was left behind
    assert "search joined the Ray cluster at" in uri_text(f"{experiment}/search.log")
    summary = json.loads(uri_text(f"{experiment}/summary.json"))
    assert [t["status"] for t in summary["trials"]] == ["completed"]
    best = summary["best"]["checkpoint"]
    assert best.startswith("train_"), best  # relative to the experiment: Ray Train wrote it to S3, from both nodes
    assert best + "/model.pt" in files
    for trial in summary["trials"]:
        first = json.loads(uri_text(f"{experiment}/trial_{trial['trial_id']}/result.json").splitlines()[0])
        assert set(first["worker_nodes"]) == both_nodes
        assert any(f.startswith(f"trial_{trial['trial_id']}/events.out.tfevents.") for f in files)  # uploaded by us
    assert {"search.json", "search.log", "study.log"} <= set(files)
    assert not list(REPO.glob("bucket*")) and not list(REPO.glob("s3*"))  # nothing mistaken for a local folder

    # Every reader works from the URI alone: the local working folder is gone, as on another machine.
    shutil.rmtree(tmp_path / "cache")
    exported = run_cli("export", experiment, f"out={tmp_path / 'export'}")
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "export" / "model.safetensors").is_file()
    report = run_cli("report", experiment)
    assert report.returncode == 0, report.stderr
    assert "early stopping: 2 epochs run of 2" in report.stdout
    resumed = run_cli("resume", experiment)
    assert resumed.returncode == 0 and "this search already finished" in resumed.stdout, resumed.stderr
    assert tensorboard_runs(experiment, tmp_path) >= {f"trial_{t['trial_id']}" for t in summary["trials"]}
    missing = run_cli("export", f"{runs}/no-such-experiment")
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines()[-1] == (
        f"error: {runs}/no-such-experiment: not a finished experiment (no summary.json)"
    )


def tensorboard_runs(experiment: str, tmp_path: Path) -> set[str]:
    """The runs `python -m search tensorboard <experiment>` serves on 127.0.0.1 (stopped by pid afterwards)."""
    import urllib.request

    from search.results.tensorboard import free_port

    port = free_port()
    log = tmp_path / "tb.log"
    process = start_search(log, experiment, f"port={port}", command="tensorboard")
    try:
        wait_for_line(log, rf"at http://127\.0\.0\.1:{port}/", process, timeout=120)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/runs", timeout=30) as reply:
            runs = set(json.loads(reply.read()))
        server_pids = descendants(process.pid)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            kill_pids([*descendants(process.pid), process.pid])
    kill_pids(server_pids)
    return runs
