"""`python -m search report` without Ray: a two-objective search's study and trial files written as its driver
writes them (finished, or still running), and the report read back from index.html, its plots and the terminal.
(The report of a real search: test_e2e.py and test_multi_objective_e2e.py.)"""

import json
from wsgiref.util import setup_testing_defaults

import pytest

from search.results.files import write_json_atomically
from search.results.report import build_report, hyperparameter_importance, pareto_axes
from search.running.ends.decider import Decider
from search.running.proposals.study_setup import open_search_study
from search.running.settings import write_settings
from search.running.study.endings import EndFacts, Ending, ending_of
from search.running.trial_results import summary_so_far
from search.viewers import cmd_report
from trainables.foundation.config import RunConfig
from trainables.foundation.space import load_run_space
from trainables.foundation.storage import Experiment
from trainables.foundation.trial_files import TrialFiles

# trial id: (val_acc and params of each epoch, how it ended, or None: still training)
TRIALS = {
    "t1": ([(0.90, 50_000), (0.95, 50_000)], Ending("completed")),
    "t2": ([(0.85, 9_000), (0.91, 9_000)], Ending("completed")),
    "t3": ([(0.80, 60_000), (0.88, 60_000)], Ending("completed")),  # dominated by t1
    "t4": ([(0.50, 5_000)], ending_of(1, 2)),  # stopped early by ASHA
    "t5": ([(0.70, 20_000)], None),
}


def a_search(tmp_path, trials=TRIALS) -> Experiment:
    """A search of val_acc and params on mlp_mnist whose trials reported and ended as `trials` says."""
    config = RunConfig(space="mlp_mnist", trials=len(trials), epochs=2, objectives="val_acc,params")
    config.storage, config.name = str(tmp_path), "mo"
    experiment = Experiment.at(str(tmp_path / "mo"))
    experiment.local.mkdir()
    write_settings(experiment, {"run": config.to_dict()})
    record = open_search_study(config, load_run_space(config), experiment)
    for trial_id, (epochs, ending) in trials.items():
        record.create(trial_id)
        files, rows = TrialFiles(experiment.location, trial_id), []
        for epoch, (value, params) in enumerate(epochs, start=1):
            checkpoint = experiment.local / f"trial_{trial_id}" / f"checkpoint_{epoch}"
            checkpoint.mkdir(parents=True)
            row = {"epoch": epoch, "val_acc": value, "params": params, "checkpoint_path": str(checkpoint)}
            rows = files.append(rows, {**row, "started_at": 1_800_000_000.0 + epoch, "epoch_s": 1.0})
            record.report(trial_id, epoch, value, {"params": params})
        if ending:
            Decider.without_files(record).end(trial_id, EndFacts(0, written=ending))
    return experiment


def finished(experiment: Experiment) -> dict:
    """The search's summary.json, with the test accuracy of its best trial and its front as the driver adds it."""
    summary, unended = summary_so_far(experiment)
    assert unended == 0
    for chosen in [summary["best"], *summary["front"]]:
        chosen.update(test_acc=chosen["metrics"]["val_acc"] - 0.01 if "metrics" in chosen else 0.9, test_samples=100)
    write_json_atomically(experiment.local / "summary.json", summary)
    return summary


def test_a_two_objective_report_lists_the_front_with_every_objective_and_its_test_accuracy(tmp_path):
    experiment = a_search(tmp_path, {k: v for k, v in TRIALS.items() if k != "t5"})
    summary = finished(experiment)
    assert [m["trial_id"] for m in summary["front"]] == ["t1", "t2"]
    report = build_report(experiment.local)
    assert report["plots"][-1] == "pareto_front.png" and (experiment.local / "report" / "pareto_front.png").is_file()
    page = (experiment.local / "report" / "index.html").read_text()
    assert "<h1>mlp_mnist: val_acc (max), params (min)</h1>" in page
    front = page[page.index("<h2>Pareto front</h2>") : page.index("<h2>Trials</h2>")]
    for member in summary["front"]:
        assert f"trial {member['trial_id']} epoch 2  val_acc={member['objectives']['val_acc']:.3g}" in front
        assert f"params={member['objectives']['params']}" in front
        assert f"test_acc={member['test_acc']:.4f}" in front
    assert "trial t3" not in front and "trial t4" not in front
    assert "best val_acc: trial t1" in page


def test_the_front_is_labelled_as_the_front_in_its_plot(tmp_path):
    experiment = a_search(tmp_path, {k: v for k, v in TRIALS.items() if k != "t5"})
    axes = pareto_axes(finished(experiment))
    labels = [text.get_text() for text in axes.get_legend().get_texts()]
    assert labels == ["dominated (completed)", "Pareto front", "stopped before the end"], labels
    assert (axes.get_xlabel(), axes.get_ylabel()) == ("val_acc", "params")
    front = next(points for points in axes.collections if points.get_label() == "Pareto front")
    assert sorted(map(tuple, front.get_offsets().tolist())) == [(0.91, 9000), (0.95, 50000)]


def test_a_report_of_a_search_still_running_draws_what_has_ended_and_says_so(tmp_path, capsys):
    experiment = a_search(tmp_path)
    assert cmd_report([str(experiment.local)]) == 0
    out = capsys.readouterr().out
    words = "the search has not finished: it is still running"
    assert out.startswith(words) and "draws the 4 trials that have ended; 1 has not yet" in out
    assert "t5" not in out and "Pareto front of val_acc (max), params (min): 2 of 4 trials" in out
    page = (experiment.local / "report" / "index.html").read_text()
    assert words in page and "t5" not in page
    assert not (experiment.local / "summary.json").exists(), "nothing may look like a finished search's result"
    # One importance: what optuna-dashboard shows for the same study (Optuna's PED-ANOVA over the completed trials;
    # t4, stopped early, is PRUNED in the study and counted by neither), the evaluator named.
    line = next(line for line in out.splitlines() if line.startswith("hyperparameter importance"))
    assert line.startswith(
        "hyperparameter importance for val_acc (Optuna's PED-ANOVA, as optuna-dashboard computes it, 3 completed "
        "trials): "
    )
    shown = dashboards_importance(experiment)
    assert line.endswith(": " + ", ".join(f"{name} {value:.2f}" for name, value in shown.items()))
    reported = hyperparameter_importance(summary_so_far(experiment)[0])
    assert {name: round(value, 6) for name, value in reported.items()} == {k: round(v, 6) for k, v in shown.items()}


def dashboards_importance(experiment: Experiment) -> dict[str, float]:
    """The first objective's importance optuna-dashboard serves for the experiment's study (its HTTP API)."""
    import optuna_dashboard
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    app = optuna_dashboard.wsgi(JournalStorage(JournalFileBackend(str(experiment.local / "study.log"))))
    environ = {"PATH_INFO": "/api/studies/0/param_importances"}
    setup_testing_defaults(environ)
    body = b"".join(app(environ, lambda status, headers, *error: None))
    return {item["name"]: item["importance"] for item in json.loads(body)["param_importances"][0]}


@pytest.mark.parametrize("folder", ["nothing", "empty"])
def test_a_report_of_what_is_no_experiment_is_refused(tmp_path, folder, capsys):
    (tmp_path / "empty").mkdir()
    from trainables.foundation.errors import UsageError

    with pytest.raises(UsageError, match="not an experiment folder"):
        cmd_report([str(tmp_path / folder)])
    assert json.dumps(sorted(p.name for p in tmp_path.iterdir())) == '["empty"]'


def test_every_trial_of_a_large_search_has_a_learning_curve_style_of_its_own():
    """25 trials (past tab20's 20 colours): each legend entry is its own colour and marker; the line style still says
    how the trial ended."""
    from matplotlib.figure import Figure

    from search.results.report import draw_learning_curves, trial_styles

    assert len(set(trial_styles(200))) == 200
    statuses = ["completed", "stopped_early", "failed"]
    trials = [{"trial_id": f"t{i:02d}", "status": statuses[i % 3]} for i in range(25)]
    histories = {t["trial_id"]: [{"epoch": 1, "val_acc": 0.5}, {"epoch": 2, "val_acc": 0.6}] for t in trials}
    ax = Figure().add_subplot()
    draw_learning_curves(ax, {"metric": "val_acc", "trials": trials}, histories)
    handles, labels = ax.get_legend_handles_labels()
    assert labels == [f"{t['trial_id']} ({t['status']})" for t in trials]
    assert len({(h.get_color(), h.get_marker()) for h in handles}) == 25
    assert [h.get_linestyle() for h in handles[:3]] == ["-", "--", ":"]
    assert ax.get_legend() is not None
    many = [{"trial_id": f"t{i:02d}", "status": "completed"} for i in range(49)]  # past the legend's 48: no legend
    ax = Figure().add_subplot()
    draw_learning_curves(ax, {"metric": "val_acc", "trials": many}, {t["trial_id"]: histories["t00"] for t in many})
    assert ax.get_legend() is None and ax.get_title().startswith("Learning curves of 49 trials")
