"""`tracking=mlflow` on the shared end-to-end search: read back through MLflow's client, and the real `mlflow server`
on 127.0.0.1 opened in a real headless Chromium. (Resume and growth into the same runs: test_lifecycle.py.)"""

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from search.results.tensorboard import free_port
from tests.e2e_helpers import run_cli
from tests.test_dashboard_e2e import BROWSER, HEADLESS
from trainables.foundation.trial_files import TrialFiles

pytestmark = pytest.mark.e2e
mlflow = pytest.importorskip("mlflow", reason="tracking=mlflow needs MLflow: pip install -e '.[mlflow]'")


def store_of(search) -> str:
    return f"sqlite:///{search['experiment'] / 'mlflow' / 'mlflow.db'}"


def test_the_search_and_every_trial_are_runs_with_their_epochs_params_and_artifacts(search):
    client = mlflow.tracking.MlflowClient(store_of(search))
    experiment = client.get_experiment_by_name("resnet_mnist")  # tracking.experiment defaults to the space's name
    runs = {run.info.run_name: run for run in client.search_runs([experiment.experiment_id])}
    summary = search["summary"]
    parent = runs.pop("e2e")
    assert parent.info.status == "FINISHED"
    assert parent.data.params["epochs"] == "4" and parent.data.tags["search.trials"] == "6"
    best = summary["best"]
    assert parent.data.metrics["best_val_acc"] == best["metrics"]["val_acc"]
    assert parent.data.metrics["test_acc"] == best["test_acc"]
    assert parent.data.tags["search.best_trial"] == best["trial_id"]
    artifacts = {item.path for item in client.list_artifacts(parent.info.run_id)}
    assert {"summary.json", "optimization_history.png", "learning_curves.png", "importance.png"} <= artifacts

    assert set(runs) == {f"trial_{trial['trial_id']}" for trial in summary["trials"]}
    for trial in summary["trials"]:
        run = runs[f"trial_{trial['trial_id']}"]
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.data.tags["search.status"] == trial["status"]
        assert run.info.status == ("FAILED" if trial["status"] == "failed" else "FINISHED")
        assert {key: str(value) for key, value in trial["config"].items()}.items() <= run.data.params.items()
        rows = TrialFiles(str(search["experiment"]), trial["trial_id"]).rows()
        for metric in ("val_acc", "val_loss", "train_loss", "images_per_s"):
            history = client.get_metric_history(run.info.run_id, metric)
            assert [(m.step, m.value) for m in history] == [(row["epoch"], row[metric]) for row in rows], metric
    assert "mlflow: mlflow ui --backend-store-uri sqlite:///" in search["output"]


@pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine (apt-get install chromium; .ci/run does)")
def test_the_mlflow_link_the_search_prints_opens_its_runs_table_in_a_fresh_browser(search, tmp_path):
    """What the search tells a user to do (`mlflow: mlflow ui ... --port 5000, then open <link>`), done: the server
    started as printed (on a free port: 5000 may be taken here), the link opened in a fresh browser profile. MLflow 3
    opens an experiment in its GenAI view unless the link asks for the runs table."""
    printed = re.search(r"^mlflow: (mlflow ui .*) --port (\d+), then open (\S+)$", search["output"], re.M)
    assert printed, search["output"][-2000:]
    command, printed_port, link = printed.groups()
    port = str(free_port())
    link = link.replace(f"://127.0.0.1:{printed_port}/", f"://127.0.0.1:{port}/")
    log = tmp_path / "mlflow.log"
    server = subprocess.Popen(
        [sys.executable, "-m", *shlex.split(command), "--port", port, "--workers", "1"],
        cwd=tmp_path,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its workers in its own group, stopped with it below
    )
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}/health", server, log)
        page = subprocess.run(
            [BROWSER, *HEADLESS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", link],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
    text = visible_text(page.stdout)
    assert text.startswith("Runs - Experiment") and "Detect Issues" not in text, text[:3000]  # not the GenAI view
    runs = 1 + len(search["summary"]["trials"])  # the parent and one nested run per trial
    assert f"{runs} matching runs" in text, text[:3000]
    assert " e2e " in text  # the search's run, by its experiment's name


def visible_text(page: str) -> str:
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", page).split())


def wait_until_healthy(url: str, server: subprocess.Popen, log, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, log.read_text()[-3000:]
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"mlflow server did not answer within {timeout}s:\n{log.read_text()[-3000:]}")


def test_resume_tracks_a_finished_search_in_another_store_whole(search, tmp_path):
    """`resume` of a finished search with tracking= keys brings that store up to it, without Ray: every trial, every
    epoch once (a search tracked late, or one whose tracking failed midway)."""
    copy = tmp_path / "e2e"
    shutil.copytree(search["experiment"], copy, ignore=shutil.ignore_patterns("train_*", "mlflow"))
    store = f"sqlite:///{tmp_path / 'late.db'}"
    result = run_cli("resume", str(copy), f"tracking.uri={store}", "tracking.experiment=late")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "already finished" in result.stdout
    assert f"MLflow holds all of it: mlflow ui --backend-store-uri {store}" in result.stdout
    client = mlflow.tracking.MlflowClient(store)
    runs = {run.info.run_name: run for run in client.search_runs([client.get_experiment_by_name("late").experiment_id])}
    assert runs.pop("e2e").info.status == "FINISHED"
    assert set(runs) == {f"trial_{trial['trial_id']}" for trial in search["summary"]["trials"]}
    for name, run in runs.items():
        rows = TrialFiles(str(copy), name.removeprefix("trial_")).rows()
        history = client.get_metric_history(run.info.run_id, "val_acc")
        assert [(m.step, m.value) for m in history] == [(row["epoch"], row["val_acc"]) for row in rows]
