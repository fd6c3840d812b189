"""A multi-objective search under an epoch budget, end to end on the real CLI and a real local Ray:
`objectives=val_acc,params,latency_ms epoch_budget=10`
on mlp_mnist with a configuration given first (`enqueue=`, narrower than a one-objective search may go), its study
(one direction per objective), the Pareto front in the summary and on the terminal, every objective in MLflow and
TensorBoard, the report's front, export picking from the front within a bound (or refusing, naming the
closest member), and the search grown by `resume epoch_budget=`: the trials follow from the budget, and the
trial-epochs spent are the budget's (a few over it: the trials side by side finish the epochs they are training,
and this MLP's epochs take a tenth of a second)."""

import json
import re

import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

from search.results.pareto import as_minimised, dominates
from tests.conftest import MNIST_MINI
from tests.e2e_helpers import VAL_LIMIT, event_data, run_cli, run_search

pytestmark = pytest.mark.e2e
NAMES = ["val_acc", "params", "latency_ms"]


def epochs_in_files(experiment) -> int:
    return sum(len(path.read_text().splitlines()) for path in experiment.glob("trial_*/result.json"))


def study_of(experiment):
    storage = JournalStorage(JournalFileBackend(str(experiment / "study.log")))
    return optuna.load_study(study_name="search", storage=storage)


def test_a_search_of_three_objectives_keeps_a_front_exports_from_it_and_grows(tmp_path):
    log = tmp_path / "cli.log"
    first = tmp_path / "first.json"
    first.write_text(json.dumps([{"hidden": 32, "layers": 1}]))  # narrower than a one-objective search may go
    result = run_search(
        log,
        "space=mlp_mnist",
        "objectives=val_acc,params,latency_ms",
        f"data.root={MNIST_MINI}",
        f"storage={tmp_path}",
        "name=mo",
        "epoch_budget=10",
        "epochs=3",
        "grace=1",
        f"data.val_limit={VAL_LIMIT}",
        "tracking=mlflow",
        f"enqueue={first}",
    )
    output = log.read_text()
    assert result.returncode == 0, output[-3000:]
    experiment = tmp_path / "mo"
    summary = json.loads((experiment / "summary.json").read_text())
    assert summary["objectives"] == [
        {"name": "val_acc", "mode": "max"},
        {"name": "params", "mode": "min"},
        {"name": "latency_ms", "mode": "min"},
    ]
    front = summary["front"]
    enqueued = [t for t in summary["trials"] if t["config"]["hidden"] == 32 and t["config"]["layers"] == 1]
    assert enqueued and enqueued[0]["objectives"]["params"] == 784 * 32 + 32 + 330
    accumulator, _ = event_data(experiment / f"trial_{enqueued[0]['trial_id']}")
    assert {"params", "latency_ms"} <= set(accumulator.Tags()["scalars"])
    trials = len(summary["trials"])
    assert (
        front and f"Pareto front of val_acc (max), params (min), latency_ms (min): {len(front)} of {trials}" in output
    )
    assert summary["run"]["trials"] == 10 and re.search(r"\| epochs 1\d/10", output)  # the budget lifted trials
    assert 10 <= summary["epochs_spent"] == epochs_in_files(experiment) <= 10 + 2 * 2 and trials < 10
    assert f"epochs: {summary['epochs_spent']} trial-epochs spent of the epoch budget of 10" in output
    completed = [t for t in summary["trials"] if t["status"] == "completed"]
    modes = [o["mode"] for o in summary["objectives"]]
    point = lambda t: as_minimised([t["objectives"][n] for n in NAMES], modes)  # noqa: E731
    for member in front:  # non-dominated among the completed trials, each with its test accuracy and checkpoint
        assert not any(dominates(point(t), point(member)) for t in completed)
        assert 0 < member["test_acc"] <= 1 and (experiment / member["checkpoint"].split("/mo/")[-1]).is_dir()
    assert front[0]["objectives"]["val_acc"] == max(m["objectives"]["val_acc"] for m in front)

    study = study_of(experiment)
    assert study.directions == [optuna.study.StudyDirection.MAXIMIZE] + [optuna.study.StudyDirection.MINIMIZE] * 2
    assert study.metric_names == NAMES
    for trial in study.get_trials(states=[optuna.trial.TrialState.COMPLETE]):
        match = next(t for t in completed if t["trial_id"] == trial.user_attrs["trial_id"])
        assert trial.values == [match["objectives"][n] for n in NAMES]
    assert {t.number for t in study.best_trials} == {
        t.number for t in study.trials if t.user_attrs["trial_id"] in {m["trial_id"] for m in front}
    }

    import mlflow

    client = mlflow.tracking.MlflowClient(f"sqlite:///{experiment / 'mlflow' / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("mlp_mnist").experiment_id])
    trial_runs = {run.data.tags["search.trial_id"]: run for run in runs if run.info.run_name.startswith("trial_")}
    assert set(trial_runs) == {t["trial_id"] for t in summary["trials"]}
    for t in summary["trials"]:  # each epoch its files hold, as metrics; none for a trial the budget stopped at once
        run = trial_runs[t["trial_id"]]
        assert run.data.tags["search.status"] == t["status"] and run.info.status in ("FINISHED", "FAILED")
        if t["epochs_run"]:
            assert set(NAMES) <= set(run.data.metrics), (t, run.data.metrics)
        else:
            assert t["status"] == "stopped_by_budget" and not run.data.metrics, (t, run.data.metrics)

    report = run_cli("report", str(experiment))
    assert report.returncode == 0 and (experiment / "report" / "pareto_front.png").stat().st_size > 10_000

    smallest = min(front, key=lambda m: m["objectives"]["params"])
    refused = run_cli("export", str(experiment), f"params<={smallest['objectives']['params'] - 1}")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert f"the closest is trial {smallest['trial_id']}" in refused.stderr
    exported = run_cli(
        "export", str(experiment), f"params<={smallest['objectives']['params']}", f"out={tmp_path / 'm'}"
    )
    assert exported.returncode == 0, exported.stderr[-2000:]
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    within = [m for m in front if m["objectives"]["params"] <= smallest["objectives"]["params"]]
    assert meta["trial_id"] == max(within, key=lambda m: m["objectives"]["val_acc"])["trial_id"]
    assert meta["objectives"] == next(m for m in front if m["trial_id"] == meta["trial_id"])["objectives"]
    assert meta["measured_at_export"]["latency_ms"] > 0 and "latency at export" in exported.stdout

    grown = run_cli("resume", str(experiment), "epoch_budget=16")
    assert grown.returncode == 0, grown.stdout[-3000:] + grown.stderr[-2000:]
    summary = json.loads((experiment / "summary.json").read_text())
    assert 16 <= summary["epochs_spent"] == epochs_in_files(experiment) <= 16 + 2 * 2 and summary["front"]
    assert len(summary["trials"]) > trials and summary["run"]["trials"] == 16
    by_budget = [t for t in summary["trials"] if t["status"] == "stopped_by_budget"]
    assert all(t["stopped"].startswith("stopped by the epoch budget") for t in by_budget), by_budget
    again = run_cli("resume", str(experiment))
    assert again.returncode == 0 and "already finished" in again.stdout
