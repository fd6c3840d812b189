"""One writer, one ending: a search on S3 whose time budget runs out, with a second driver and readers at it while
it runs. Real processes, a real S3 endpoint (moto), the real CLI."""

import json
import os
import re
import signal
import time
import urllib.error
import urllib.request

import pytest

from tests.conftest import MNIST_MINI
from tests.e2e_helpers import (
    descendants,
    kill_pids,
    run_cli,
    start_search,
    uri_bytes,
    uri_files,
    uri_text,
    wait_for_line,
)

pytestmark = pytest.mark.e2e

# mlp_mnist trains an epoch of 2,048 digits in well under a second: every trial is still training when its
# session's budget runs out (50 epochs, no ASHA rung before the last)
SEARCH = [
    "space=mlp_mnist",
    f"data.root={MNIST_MINI}",
    "data.limit=2048",
    "data.val_limit=400",
    "seed=5",
    "trials=3",
    "epochs=50",
    "grace=50",
    "concurrency=2",
    "tracking=mlflow",
]


def test_on_s3_a_second_driver_is_refused_a_stalled_one_is_fenced_off_and_the_budget_ends_trials_alike(
    tmp_path, s3_bucket
):
    """A search on S3: a second driver is refused while the first renews its lease; readers never write. Then the
    first driver stalls (SIGSTOP) past the lease's staleness, a second driver from another home (as another
    machine) takes the search over, and the first is thawed: it stops without another write to the experiment,
    naming the new holder (exit 1). The second finishes under its time budget; every account agrees and the study
    holds every trial once, none RUNNING."""
    experiment = f"{s3_bucket}/runs/w"
    log = tmp_path / "run.log"
    stale = {**os.environ, "SEARCH_LEASE_STALE_S": "6"}  # the takeover's wait, shortened for the test
    # a budget the first driver cannot spend before its stall, however loaded the machine (a 30 s one ran out first
    # under load); the second driver's short budget ends the trials
    process = start_search(log, *SEARCH, f"storage={s3_bucket}/runs", "name=w", "time_budget=900", env=stale)
    second = None
    try:
        budget_deadline(log, process)
        # a second driver of the same search, while the first runs: refused in one line naming the first
        refused = run_cli("resume", experiment)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert f"another driver is writing this search: pid {process.pid} on " in refused.stderr, refused.stderr
        # readers: the dashboard serves a copy of its own, read-only; report draws what has ended and says so
        dashboard_refuses_writes(experiment, tmp_path)
        report = run_cli("report", experiment)
        assert report.returncode == 0 and "the search has not finished" in report.stdout, report.stderr
        wait_for_line(log, r"epoch 1/50", process)  # a trial trained before the stall
        process.send_signal(signal.SIGSTOP)
        lease_goes_stale(experiment, process, float(stale["SEARCH_LEASE_STALE_S"]))  # by the store's clock
        other_home = {**stale, "XDG_CACHE_HOME": str(tmp_path / "other-home")}
        second_log = tmp_path / "second.log"
        second = start_search(second_log, experiment, "time_budget=5", command="resume", env=other_home)
        wait_for_line(second_log, r"starting a local Ray instance", second)  # it holds the lease, Ray starts
        before = drivers_files(experiment)
        process.send_signal(signal.SIGCONT)
        assert process.wait(timeout=120) == 1, log.read_text()[-3000:]
        assert drivers_files(experiment) == before, "the stalled driver wrote to the experiment after the takeover"
        assert f"another driver took this search over: pid {second.pid} on " in log.read_text(), log.read_text()[-3000:]
        assert second.wait(timeout=300) == 0, second_log.read_text()[-3000:]
    finally:
        for driver in (process, second):
            if driver is not None and driver.poll() is None:
                driver.send_signal(signal.SIGCONT)
                kill_pids([driver.pid, *descendants(driver.pid)])
    summary = json.loads(uri_text(f"{experiment}/summary.json"))
    trial_ids = [t["trial_id"] for t in summary["trials"]]
    assert len(set(trial_ids)) == len(trial_ids) >= 2  # every trial once
    assert {t["status"] for t in summary["trials"]} <= {"completed", "stopped_by_budget"}, summary["trials"]
    assert "stopped_by_budget" in {t["status"] for t in summary["trials"]}
    assert all(t.state.name != "RUNNING" for t in study_of(experiment, tmp_path).trials)
    assert every_account_agrees(experiment, summary, tmp_path)
    # a registration writes the search's MLflow store: it reaches the URI, where the next download finds it
    registered = run_cli("export", experiment, "tracking.register=mlp-digits")
    assert registered.returncode == 0, registered.stdout[-3000:] + registered.stderr[-3000:]
    assert [m.name for m in mlflow_client(experiment, tmp_path).search_registered_models()] == ["mlp-digits"]
    for trial_id in trial_ids:  # each went on from its checkpoint, not from epoch 0
        rows = result_rows(experiment, trial_id)
        assert [row["epoch"] for row in rows] == list(range(1, len(rows) + 1))


# Ray Tune's own snapshot of its run (timestamped files the search never reads: it restores from its study), which a
# stalled driver's Tune may write once more as it stops (docs/one-writer.md)
TUNES_OWN = ("experiment_state-", "search_gen_state-", "basic-variant-state-", "tuner.pkl", "trainable.pkl")


def drivers_files(experiment: str) -> dict[str, bytes]:
    """What the search's driver writes to the experiment (its study, settings, log, MLflow store, TensorBoard events,
    ends and summary): everything but the trials' own rows and checkpoints, which their processes write, the lease,
    and Tune's own snapshot."""
    own = [
        path
        for path in uri_files(experiment)
        if not path.endswith("result.json") and not path.startswith(("train_", "driver.lease", *TUNES_OWN))
    ]
    return {path: uri_bytes(f"{experiment}/{path}") for path in own}


def result_rows(experiment: str, trial_id: str) -> list[dict]:
    return [json.loads(line) for line in uri_text(f"{experiment}/trial_{trial_id}/result.json").splitlines()]


def budget_deadline(log, process, timeout: float = 120) -> float:
    """The budget's end (a Unix time), as the driver logs it in its search.log when the clock starts."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        named = re.search(r"log in (\S+)", log.read_text())
        if named:
            found = re.search(r"time budget ends at ([0-9.]+)", open(named.group(1)).read())
            if found:
                return float(found.group(1))
        assert process.poll() is None, log.read_text()[-3000:]
        time.sleep(0.2)
    raise AssertionError(log.read_text()[-3000:])


def lease_goes_stale(experiment: str, process, newcomers_stale_s: float, timeout: float = 120) -> None:
    """Waits until the stalled driver's lease is stale by the store's clock, as a newcomer judges it: its age at least
    the longer of the holder's staleness (written in the lease) and the newcomer's own."""
    from search.running.writer.lease_store import age_by_store, lease_store
    from trainables.foundation.storage import LEASE_FILE

    store = lease_store(f"{experiment}/{LEASE_FILE}")
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        seen = store.read()
        age = age_by_store(seen, store.now())
        if age is not None and age >= max(newcomers_stale_s, float(seen.holder["stale_s"])):
            return
        time.sleep(0.2)
    raise AssertionError(f"the lease of pid {process.pid} did not go stale in {timeout} s: {seen.holder}")


def dashboard_refuses_writes(experiment: str, tmp_path) -> None:
    log = tmp_path / "dashboard.log"
    server = start_search(log, experiment, "port=0", command="dashboard")
    try:
        url = None
        for _ in range(300):
            url = re.search(r"at (http://127\.0\.0\.1:\d+/)", log.read_text())
            if url or server.poll() is not None:
                break
            time.sleep(0.1)
        assert url, log.read_text()
        studies = json.loads(urllib.request.urlopen(url.group(1) + "api/studies", timeout=30).read())
        assert studies["study_summaries"][0]["study_name"] == "search"
        for method, path in (("POST", "api/trials/0/tell"), ("DELETE", "api/studies/0")):
            request = urllib.request.Request(url.group(1) + path, data=b'{"state": "Fail"}', method=method)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=30)
            assert refused.value.code == 403 and b"read-only" in refused.value.read()
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            kill_pids([server.pid])


def study_of(experiment: str, tmp_path):
    """The study at the URI, read with Optuna from a copy."""
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    copy = tmp_path / f"study-{time.monotonic_ns()}.log"
    copy.write_bytes(uri_bytes(f"{experiment}/study.log"))
    return optuna.load_study(study_name="search", storage=JournalStorage(JournalFileBackend(str(copy))))


def mlflow_client(experiment: str, tmp_path):
    """MLflow's client on a copy of the store the search keeps at the URI."""
    from mlflow.tracking import MlflowClient

    copy = tmp_path / f"mlflow-{time.monotonic_ns()}.db"
    copy.write_bytes(uri_bytes(f"{experiment}/mlflow/mlflow.db"))
    return MlflowClient(f"sqlite:///{copy}")


def every_account_agrees(experiment: str, summary: dict, tmp_path) -> bool:
    """For every trial: the study (state, status, epochs), the summary, its end.json and MLflow say the same."""
    state = {"completed": "COMPLETE", "stopped_by_budget": "PRUNED"}
    # by trial id: a continuation (a later study trial) stands for the trial it continues
    study = {t.user_attrs["trial_id"]: t for t in study_of(experiment, tmp_path).trials}
    client = mlflow_client(experiment, tmp_path)
    runs = {r.info.run_name: r for r in client.search_runs([client.get_experiment_by_name("mlp_mnist").experiment_id])}
    for trial in summary["trials"]:
        frozen, status = study[trial["trial_id"]], trial["status"]
        ending = json.loads(uri_text(f"{experiment}/trial_{trial['trial_id']}/end.json"))
        run = runs[f"trial_{trial['trial_id']}"]
        epochs = len(result_rows(experiment, trial["trial_id"]))
        assert frozen.state.name == state[status] and frozen.user_attrs["status"] == status, (trial, frozen)
        assert ending["status"] == status and run.data.tags["search.status"] == status, (trial, ending, run.data.tags)
        assert run.info.status == "FINISHED" and len(client.get_metric_history(run.info.run_id, "epoch")) == epochs
        assert trial["epochs_run"] == epochs == max(frozen.intermediate_values), (trial, frozen.intermediate_values)
    return True
