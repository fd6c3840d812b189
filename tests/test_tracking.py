"""`tracking=mlflow` without Ray: a study and trial files in a folder, a real MLflow SQLite store, read back through
MLflow's client. (The end-to-end search with tracking is in test_e2e.py, resume and growth in test_lifecycle.py.)"""

import contextlib
import http.server
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import optuna
import pytest

from search.running.ends.callbacks import Tracking
from search.running.ends.decider import Decider
from search.running.ends.reconcile import continue_stopped_by_budget
from search.running.study.endings import EndFacts, Ending, ending_of
from search.running.study.record import StudyRecord
from search.running.tracking.mlflow_store import mlflow_client, mlflow_ui_words
from search.running.tracking.tracker import MlflowTracker, start_tracker
from trainables.foundation.config import RunConfig, TrackingConfig
from trainables.foundation.storage import Experiment
from trainables.foundation.trial_files import TRIAL_KEY, TrialFiles

mlflow = pytest.importorskip("mlflow", reason="tracking=mlflow needs MLflow: pip install -e '.[mlflow]'")

SPACE = {"lr": optuna.distributions.FloatDistribution(1e-3, 1.0, log=True)}


def a_search(tmp_path, uri: str = "", make: bool = True):
    experiment = Experiment.at(str(tmp_path / "exp"))
    experiment.local.mkdir(exist_ok=not make)
    record = StudyRecord.in_memory(SPACE, "val_acc", "max", optuna.samplers.RandomSampler(seed=0), epochs=2)
    config = RunConfig(space="cnn_mnist", trials=2, epochs=2, tracking=TrackingConfig(to="mlflow", uri=uri))
    return experiment, record, config


def epoch(experiment, record, trial_id: str, number: int, value: float) -> None:
    """What a trial and the driver record of an epoch: its row in result.json, then its value in the study."""
    files = TrialFiles(experiment.location, trial_id)
    files.append(files.rows(), {"epoch": number, "val_acc": value, "val_loss": 1 - value, "diverged": False})
    record.report(trial_id, number, value)


def runs(experiment) -> dict:
    client = mlflow.tracking.MlflowClient(f"sqlite:///{experiment.local / 'mlflow' / 'mlflow.db'}")
    found = client.search_runs([client.get_experiment_by_name("cnn_mnist").experiment_id])
    return {run.info.run_name: (run, client.get_metric_history(run.info.run_id, "val_acc")) for run in found}


def test_a_resumed_search_logs_into_the_same_runs_and_no_epoch_twice(tmp_path):
    """A search interrupted with t2 training and t3 stopped by its time budget, then resumed and grown (t3
    continued): their runs are RUNNING again while they train, then end as the study ends them, at the end of their
    last epoch; one run per trial and every epoch once, however often the search is resumed."""
    experiment, record, config = a_search(tmp_path)
    record.create("t1")
    epoch(experiment, record, "t1", 1, 0.5)
    epoch(experiment, record, "t1", 2, 0.7)
    Decider.without_files(record).end("t1", EndFacts(0, written=Ending("completed")))
    record.create("t2")
    epoch(experiment, record, "t2", 1, 0.4)
    record.create("t3")
    epoch(experiment, record, "t3", 1, 0.3)
    Decider.without_files(record).end("t3", EndFacts(0, written=ending_of(1, 2, budget="time")))
    first = start_tracker(config, "cnn_mnist", experiment, "val_acc", record)
    first.sync(record)
    first.interrupted()  # as when the search is interrupted with t2 unfinished

    logged = runs(experiment)
    assert set(logged) == {"exp", "trial_t1", "trial_t2", "trial_t3"}
    parent = logged["exp"][0]
    assert parent.info.status == "KILLED" and parent.data.params["epochs"] == "2"
    assert [(m.step, m.value) for m in logged["trial_t1"][1]] == [(1, 0.5), (2, 0.7)]
    assert logged["trial_t1"][0].info.status == "FINISHED"
    assert logged["trial_t1"][0].data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert logged["trial_t2"][0].info.status == "KILLED"
    assert (logged["trial_t3"][0].info.status, logged["trial_t3"][0].data.tags["search.status"]) == (
        "FINISHED",
        "stopped_by_budget",
    )

    continue_stopped_by_budget(record)  # `resume` of a grown search; it reopens the store as a new driver would
    second = start_tracker(config, "cnn_mnist", experiment, "val_acc", record)
    assert second.ready()
    logged = runs(experiment)
    for name in ("trial_t2", "trial_t3"):
        assert (logged[name][0].info.status, logged[name][0].data.tags["search.status"]) == ("RUNNING", "running")
    epoch(experiment, record, "t2", 2, 0.6)
    Decider.without_files(record).end("t2", EndFacts(0, written=Ending("completed")))
    files = TrialFiles(experiment.location, "t3")
    files.append(files.rows(), {"epoch": 2, "val_acc": 0.65, "started_at": 1_800_000_000.0, "epoch_s": 2.5})
    record.report("t3", 2, 0.65)
    Decider.without_files(record).end("t3", EndFacts(0, written=Ending("completed")))
    second.epoch("t2", {"lr": 0.1})  # Tune reports a recovered epoch again: still logged once
    second.ended(record, "t2", {"lr": 0.1})
    second.ended(record, "t3", {"lr": 0.1})  # its last epoch comes from its files
    second.sync(record)
    summary = {"trials": [{"status": "completed"}] * 3, "best": {"trial_id": "t1", "metrics": {"val_acc": 0.7}}}
    second.finish(summary)
    start_tracker(config, "cnn_mnist", experiment, "val_acc", record).finish(summary)  # `resume` of a finished search

    logged = runs(experiment)
    assert set(logged) == {"exp", "trial_t1", "trial_t2", "trial_t3"}, "one run per trial, however resumed"
    assert [(m.step, m.value) for m in logged["trial_t1"][1]] == [(1, 0.5), (2, 0.7)]
    assert [(m.step, m.value) for m in logged["trial_t2"][1]] == [(1, 0.4), (2, 0.6)]
    assert [(m.step, m.value) for m in logged["trial_t3"][1]] == [(1, 0.3), (2, 0.65)]
    for name in ("trial_t2", "trial_t3"):
        assert (logged[name][0].info.status, logged[name][0].data.tags["search.status"]) == ("FINISHED", "completed")
    assert logged["trial_t3"][0].info.end_time == 1_800_000_002_500  # the end of its last epoch
    parent = logged["exp"][0]
    assert parent.info.status == "FINISHED" and parent.data.metrics["best_val_acc"] == 0.7
    assert parent.data.tags["search.best_trial"] == "t1"
    client = mlflow.tracking.MlflowClient(f"sqlite:///{experiment.local / 'mlflow' / 'mlflow.db'}")
    best = client.get_metric_history(parent.info.run_id, "best_val_acc")
    assert [(m.step, m.value) for m in best] == [(3, 0.7)], "a repeated finish logs the result once"
    store = f"sqlite:///{experiment.local / 'mlflow' / 'mlflow.db'}"
    link = f"http://127.0.0.1:5000/#/experiments/{parent.info.experiment_id}?workflowType=machine_learning"
    assert mlflow_ui_words("", experiment) == f"mlflow ui --backend-store-uri {store} --port 5000, then open {link}"


def test_a_resume_asks_no_history_of_a_run_ended_with_every_epoch_and_logs_what_files_gained(tmp_path, monkeypatch):
    """The second driver reads every nested run page after page (a page of one here), asks MLflow nothing of a trial
    whose run ended with every epoch its files hold, and logs the epoch a trial's files gained while tracking failed."""
    import search.running.tracking.tracker as tracker_module

    experiment, record, config = a_search(tmp_path)
    for trial_id in ("t1", "t2", "t3"):
        record.create(trial_id)
        epoch(experiment, record, trial_id, 1, 0.5)
        Decider.without_files(record).end(trial_id, EndFacts(0, written=Ending("completed")))
    assert start_tracker(config, "cnn_mnist", experiment, "val_acc", record).ready()
    files = TrialFiles(experiment.location, "t2")  # an epoch MLflow never saw: tracking had failed then
    files.append(files.rows(), {"epoch": 2, "val_acc": 0.6, "val_loss": 0.4, "diverged": False})
    asked, real = [], mlflow.tracking.MlflowClient.get_metric_history
    monkeypatch.setattr(
        mlflow.tracking.MlflowClient,
        "get_metric_history",
        lambda c, run_id, key: asked.append(run_id) or real(c, run_id, key),
    )
    monkeypatch.setattr(tracker_module, "PAGE", 1)
    assert start_tracker(config, "cnn_mnist", experiment, "val_acc", record).ready()
    asked_by_resume = set(asked)
    logged = runs(experiment)
    assert asked_by_resume == {logged["trial_t2"][0].info.run_id}
    client = mlflow.tracking.MlflowClient(f"sqlite:///{experiment.local / 'mlflow' / 'mlflow.db'}")
    every_run = client.search_runs([client.get_experiment_by_name("cnn_mnist").experiment_id])
    assert sorted(run.info.run_name for run in every_run) == ["exp", "trial_t1", "trial_t2", "trial_t3"], "one a trial"
    assert [(m.step, m.value) for m in logged["trial_t2"][1]] == [(1, 0.5), (2, 0.6)]


def test_a_run_interrupted_with_every_epoch_logged_ends_as_the_study_ends_its_trial(tmp_path):
    """t2 trained while the search was interrupted (its run KILLED, every epoch logged), then the next driver ended
    it from its files: that run is not one to skip, it ends FINISHED with the study's status."""
    experiment, record, config = a_search(tmp_path)
    t1_ended_t2_training(experiment, record)
    start_tracker(config, "cnn_mnist", experiment, "val_acc", record).interrupted()
    assert runs(experiment)["trial_t2"][0].info.status == "KILLED"
    Decider.without_files(record).end("t2", EndFacts(0, written=Ending("completed")))
    assert start_tracker(config, "cnn_mnist", experiment, "val_acc", record).ready()
    run, history = runs(experiment)["trial_t2"]
    assert (run.info.status, run.data.tags["search.status"], [m.step for m in history]) == (
        "FINISHED",
        "completed",
        [1],
    )


def t1_ended_t2_training(experiment, record, rows: bool = True) -> None:
    """Two trials in the study (and their rows in their files when `rows`): t1 completed, t2 training."""
    for trial_id in ("t1", "t2"):
        record.create(trial_id)
        if rows:
            epoch(experiment, record, trial_id, 1, 0.5)
        else:
            record.report(trial_id, 1, 0.5)
    Decider.without_files(record).end("t1", EndFacts(0, written=Ending("completed")))


RESUMED_IN_A_FRESH_PROCESS = """
import importlib.abc, sys, threading
from pathlib import Path
imported = []
class Seen(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        imported.append((threading.current_thread().name, name))
sys.meta_path.insert(0, Seen())
from tests.test_tracking import a_search, t1_ended_t2_training
from search.running.tracking.tracker import start_tracker
experiment, record, config = a_search(Path(sys.argv[1]), make=False)
t1_ended_t2_training(experiment, record, rows=False)
tracker = start_tracker(config, "cnn_mnist", experiment, "val_acc", record)
assert tracker.ready() and len(tracker.runs) == 2, tracker.runs
print(sorted({name for thread, name in imported if thread == "mlflow-tracker"}))
"""


def test_the_trackers_thread_imports_nothing_when_a_driver_resumes(tmp_path):
    """MLflow's imports in the tracker's thread raced the main thread's: a resuming driver (a fresh process) opens
    the store in its main thread, whose calls import all that the thread's listing and bringing up to date need."""
    experiment, record, config = a_search(tmp_path)
    t1_ended_t2_training(experiment, record)
    start_tracker(config, "cnn_mnist", experiment, "val_acc", record).interrupted()
    said = subprocess.run(
        [sys.executable, "-c", RESUMED_IN_A_FRESH_PROCESS, str(tmp_path)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert said.returncode == 0 and said.stdout.strip() == "[]", said.stdout[:600] + said.stderr[-2000:]


class AlwaysFailing(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_error(500, "broken tracking server")

    do_POST = do_GET

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def a_search_tracked_by(handler, tmp_path):
    """A search of one trial with one epoch, tracked by a server on 127.0.0.1 that answers with `handler`."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        experiment, record, config = a_search(tmp_path, uri=f"http://127.0.0.1:{server.server_address[1]}")
        record.create("t1")
        epoch(experiment, record, "t1", 1, 0.5)
        yield experiment, record, config
    finally:
        server.shutdown()


def test_a_tracking_failure_is_named_once_and_never_raises(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with a_search_tracked_by(AlwaysFailing, tmp_path) as (experiment, record, config):
        tracker = MlflowTracker(config, "cnn_mnist", experiment, "val_acc")
        tracker.open()
        tracker.sync(record)
        tracker.epoch("t1", {"lr": 0.1})
        tracker.finish({"trials": [], "best": None})
        tracker.interrupted()
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("tracking:")]
    assert len(lines) == 1 and "MLflow failed" in lines[0] and "the search goes on without tracking" in lines[0]


def test_a_tracking_server_that_stops_answering_never_holds_up_tunes_callbacks(tmp_path, capsys, monkeypatch):
    """Tune's callbacks (an epoch, a trial's end) hand their calls to the tracker's thread: they return within a
    second while the server, reached once the store is open, has not answered at all; the driver's own calls wait for
    them, then the failure is named once."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")  # a callback that called the server would wait it out
    answer = threading.Event()

    class Stalled(AlwaysFailing):
        def do_GET(self):
            answer.wait(30)
            super().do_GET()

        do_POST = do_GET

    with a_search_tracked_by(Stalled, tmp_path) as (experiment, record, config):
        try:
            # the store opens (in the driver's main thread) on the experiment's own database, then stops answering:
            # the thread's calls go to the stalled server
            stalled, config.tracking.uri = config.tracking.uri, ""
            opens = MlflowTracker.open

            def open_then_stall(self):
                opens(self)
                assert self.parent and not self.broken
                self.client = mlflow_client(stalled)

            monkeypatch.setattr(MlflowTracker, "open", open_then_stall)
            tracker = start_tracker(config, "cnn_mnist", experiment, "val_acc", record)
            callback = Tracking(tracker, record)
            trial = SimpleNamespace(trial_id="tune-id", config={TRIAL_KEY: "t1", "lr": 0.1})
            Decider.without_files(record).end("t1", EndFacts(0, written=Ending("completed")))

            def as_tune_calls_them():
                callback.on_trial_result(1, [trial], trial, {"epoch": 1, "val_acc": 0.5})
                callback.trial_ended([trial], "t1", Ending("completed"), trial)

            tune = threading.Thread(target=as_tune_calls_them, daemon=True)
            tune.start()
            tune.join(timeout=1.0)  # a call that blocks fails here, however long it would block
            assert not tune.is_alive(), "Tune's callbacks are waiting for a tracking server that does not answer"
            assert not answer.is_set() and tracker.worker.is_alive()  # the server has answered nothing yet
            answer.set()
            assert tracker.ready() is False  # the server failed the thread's first call
            tracker.finish({"trials": [], "best": None})
        finally:
            answer.set()  # before the server shuts down
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("tracking:")]
    assert len(lines) == 1 and "MLflow failed" in lines[0]


def test_a_non_finite_epoch_is_logged_once_however_often_the_search_resumes(tmp_path):
    experiment, record, config = a_search(tmp_path)
    record.create("t1")
    files = TrialFiles(experiment.location, "t1")
    rows = files.append([], {"epoch": 1, "val_acc": 0.5, "train_loss": 1.0})
    files.append(rows, {"epoch": 2, "val_acc": float("nan"), "train_loss": float("nan"), "val_loss": 2.0})
    record.report("t1", 1, 0.5)
    for _ in range(3):  # the search and two resumes
        start_tracker(config, "cnn_mnist", experiment, "val_acc", record).ready()
    client = mlflow.tracking.MlflowClient(f"sqlite:///{experiment.local / 'mlflow' / 'mlflow.db'}")
    run, _ = runs(experiment)["trial_t1"]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "val_loss")] == [2]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "epoch")] == [1, 2]
    kind = client.get_experiment_by_name("cnn_mnist").tags["mlflow.experimentKind"]
    assert kind == "custom_model_development"  # MLflow's UI opens it in its model-training view


def test_the_plots_the_report_drew_reach_mlflow_the_fronts_included(tmp_path):
    from tests.test_report import TRIALS, finished
    from tests.test_report import a_search as a_two_objective_search

    experiment = a_two_objective_search(tmp_path, {k: v for k, v in TRIALS.items() if k != "t5"})
    summary = finished(experiment)
    config = RunConfig(space="mlp_mnist", trials=4, epochs=2, tracking=TrackingConfig(to="mlflow"))
    tracker = MlflowTracker(config, "mlp_mnist", experiment, "val_acc")
    tracker.open()
    tracker.finish(summary)
    client = mlflow.tracking.MlflowClient(f"sqlite:///{experiment.local / 'mlflow' / 'mlflow.db'}")
    drawn = sorted(path.name for path in (experiment.local / "report").glob("*.png"))
    assert "pareto_front.png" in drawn
    assert {item.path for item in client.list_artifacts(tracker.parent)} == {"summary.json", *drawn}
