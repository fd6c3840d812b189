"""`asha=promote` end to end: a real search on a local Ray instance whose paused trials are resumed within it from
their checkpoints, each still one trial (the study, its files, TensorBoard and MLflow), as the rule decides."""

import json

import optuna
import pytest
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

from search.running.asha.study_asha import StudyASHA
from search.running.study.queries import CONTINUES_ATTR, StudyQueries, epoch_values, rung_decisions, trial_id_of
from tests.e2e_helpers import event_data
from tests.python_searches import PROMOTION
from trainables.foundation.trial_files import TrialFiles

pytestmark = pytest.mark.e2e
mlflow = pytest.importorskip("mlflow", reason="tracking=mlflow needs MLflow: pip install -e '.[mlflow]'")


def replayed_by_the_rule(values: dict[str, dict[int, float]], order: list[str], epochs: int) -> dict[str, list]:
    """The epochs each trial trains in a search of one trial at a time under the rule, on the values the run met."""
    scheduler = StudyASHA(time_attr="epoch", max_t=epochs, grace_period=1, reduction_factor=3, promote=True)
    scheduler.set_search_properties("val_acc", "max")
    trained, new = {}, list(order)
    while True:
        trial_id = scheduler.promotion()
        if trial_id is not None:
            scheduler.promoted(trial_id)
        elif new:
            trial_id = new.pop(0)
        elif all(len(done) < epochs for done in trained.values()) and scheduler.promotions.best_waiting():
            trial_id = scheduler.promotions.best_waiting()  # none trained to the end: the best paused one goes on
            scheduler.promoted(trial_id)
        else:
            return trained
        for epoch in range(len(trained.get(trial_id, [])) + 1, epochs + 1):
            trained.setdefault(trial_id, []).append(epoch)
            if scheduler.decide(trial_id, epoch, {"val_acc": values[trial_id][epoch]}) == "STOP":
                break


def test_a_promotion_search_resumes_paused_trials_from_their_checkpoints_as_the_rule_decides(python_searches):
    """mlp_mnist, 6 trials of 4 epochs one at a time, tracked in MLflow (tests/python_searches.py's PROMOTE), run in
    the process of README.md's example."""
    output = python_searches["stdout"].split(PROMOTION + "\n", 1)[1]
    assert "ASHA (promotion variant) from epoch 1 of 4" in output
    assert "resumed after epoch 1" in output and "resumed after epoch 3" in output  # the live view names each
    assert "recovered from its files" not in output  # a resumed trial's earlier epochs, shown once as trained
    assert (
        "paused after epoch 1 (ASHA's rung: it goes on if promoted)" in output
        and "finished: stopped_early" not in output
    )
    experiment = python_searches["runs"] / "promote"
    storage = JournalStorage(JournalFileBackend(str(experiment / "study.log")))
    record = StudyQueries(optuna.load_study(study_name="search", storage=storage))
    proposed = record.proposed()
    assert len(proposed) == 6 and len({trial_id_of(t) for t in proposed}) == 6  # one trial per configuration

    continued = [t for t in proposed if CONTINUES_ATTR in t.user_attrs]
    assert continued, "no paused trial was resumed"
    for trial in continued:
        assert "promoted" in rung_decisions(trial).values()  # paused at a rung, then promoted there
    finished = [t for t in proposed if max(epoch_values(t)) == 4]
    assert len(finished) == 1 and rung_decisions(finished[0])[3] == "promoted"  # rung 3 holds two: its last promotion
    first_numbers = sorted(proposed, key=lambda t: min(_chain(record, t)))
    values = {trial_id_of(t): epoch_values(t) for t in proposed}
    trained = replayed_by_the_rule(values, [trial_id_of(t) for t in first_numbers], 4)
    assert {trial_id_of(t): sorted(epoch_values(t)) for t in proposed} == trained

    mlflow_client = mlflow.tracking.MlflowClient(f"sqlite:///{experiment / 'mlflow' / 'mlflow.db'}")
    runs = {run.info.run_name: run for run in mlflow_client.search_runs(["1"])}
    summary = json.loads((experiment / "summary.json").read_text())
    assert len(summary["trials"]) == 6 and not list(experiment.glob("trial_*_????"))  # Tune's twin folders: gone
    for trial in continued:
        trial_id, epochs = trial_id_of(trial), sorted(epoch_values(trial))
        rows = TrialFiles(str(experiment), trial_id).rows()
        assert [row["epoch"] for row in rows] == epochs  # each epoch once, in order
        promoted = [epoch for epoch, decision in rung_decisions(trial).items() if decision == "promoted"]
        resumed = [max([p for p in promoted if p < row["epoch"]], default=0) for row in rows]
        assert [row["resumed_from"] for row in rows] == resumed  # each run from the checkpoint of its promotion
        accumulator, hparams = event_data(experiment / f"trial_{trial_id}")
        steps = [event.step for event in accumulator.Scalars("val_acc")]  # an event file per run: read in name order
        assert sorted(steps) == epochs  # each epoch once
        run = runs[f"trial_{trial_id}"]
        history = mlflow_client.get_metric_history(run.info.run_id, "epoch")
        assert sorted(metric.step for metric in history) == epochs
        ended = next(t for t in summary["trials"] if t["trial_id"] == trial_id)
        assert (hparams["status"], bool(hparams["stopped_early"])) == (
            ended["status"],
            ended["status"] == "stopped_early",
        )
        assert [event.value for event in accumulator.Scalars("hparams/epochs_run")] == [ended["epochs_run"]]
        assert run.data.tags["search.status"] == ended["status"] and ended["epochs_run"] == epochs[-1]


def _chain(record: StudyQueries, trial) -> list[int]:
    """The study numbers of a trial and of every trial it continues."""
    numbers = [trial.number]
    while CONTINUES_ATTR in trial.user_attrs:
        trial = record.study.get_trials(deepcopy=False)[trial.user_attrs[CONTINUES_ATTR]]
        numbers.append(trial.number)
    return numbers
