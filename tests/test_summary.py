import json

from search.results.files import write_json_atomically
from search.results.summary import TrialResult, format_table, summarize, trial_row


def best_epoch_row(rows, metric, mode):
    """The standing epoch of a trial whose learning rate does not anneal: its best epoch with a checkpoint."""
    return trial_row(TrialResult("a", {}, rows), metric, mode)


def _rows(tmp_path, trial, values):
    rows = []
    for epoch, value in enumerate(values, start=1):
        checkpoint = tmp_path / trial / f"checkpoint_epoch_{epoch:04d}"
        checkpoint.mkdir(parents=True)
        rows.append({"epoch": epoch, "val_acc": value, "checkpoint_path": str(checkpoint)})
    return rows


def test_best_epoch_not_last_epoch(tmp_path):
    rows = _rows(tmp_path, "a", [0.5, 0.9, 0.7])
    assert best_epoch_row(rows, "val_acc", "max")["epoch"] == 2
    assert best_epoch_row(rows, "val_acc", "min")["epoch"] == 1


def test_pruned_checkpoints_are_never_chosen(tmp_path):
    rows = _rows(tmp_path, "a", [0.5, 0.9])
    (tmp_path / "a" / "checkpoint_epoch_0002").rmdir()
    assert best_epoch_row(rows, "val_acc", "max")["epoch"] == 1


def test_summary_statuses_and_best(tmp_path):
    records = [
        TrialResult("t1", {"lr": 0.1}, _rows(tmp_path, "t1", [0.5, 0.6, 0.8])),
        TrialResult("t2", {"lr": 0.2}, _rows(tmp_path, "t2", [0.3]), status="stopped_early"),
        TrialResult("t3", {"lr": 9.0}, [{"epoch": 1, "val_acc": 0.1}], "failed", "NonFiniteLoss: non-finite loss"),
        TrialResult("t4", {"lr": 0.3}, [], status="failed", reason="RuntimeError: boom"),
        TrialResult("t5", {"lr": 0.4}, _rows(tmp_path, "t5", [0.2]), "stopped_by_budget", "stopped by the budget"),
    ]
    summary = summarize("resnet_mnist", "val_acc", "max", {"epochs": 3}, records)
    by_id = {t["trial_id"]: t for t in summary["trials"]}
    assert by_id["t1"]["status"] == "completed"
    assert by_id["t2"]["status"] == "stopped_early" and by_id["t2"]["epochs_run"] == 1
    assert by_id["t3"]["status"] == "failed" and "non-finite" in by_id["t3"]["error"]
    assert by_id["t4"]["status"] == "failed" and by_id["t4"]["error"] == "RuntimeError: boom"
    assert by_id["t5"]["status"] == "stopped_by_budget" and by_id["t5"]["error"] is None
    assert by_id["t5"]["stopped"] == "stopped by the budget" and by_id["t5"]["epochs_run"] == 1
    assert [t["trial_id"] for t in summary["trials"]][:2] == ["t1", "t2"]
    assert summary["best"]["trial_id"] == "t1" and summary["best"]["epoch"] == 3
    assert summary["best"]["checkpoint"].endswith("t1/checkpoint_epoch_0003")
    assert by_id["t2"]["checkpoint"].endswith("t2/checkpoint_epoch_0001") and by_id["t4"]["checkpoint"] is None
    table = format_table(summary)
    assert table.splitlines()[1].startswith("t1")


def test_atomic_write_leaves_no_temporary(tmp_path):
    write_json_atomically(tmp_path / "summary.json", {"a": 1})
    assert json.loads((tmp_path / "summary.json").read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_ties_go_to_the_later_epoch(tmp_path):
    rows = _rows(tmp_path, "a", [0.5, 0.9, 0.9])
    assert best_epoch_row(rows, "val_acc", "max")["epoch"] == 3


def test_an_annealed_trial_stands_by_its_final_epoch(tmp_path):
    """A OneCycle/cosine trial's checkpoints before its last epoch are taken at a high learning rate: its model is the
    final one, even when an earlier epoch scored higher on the validation digits."""
    onecycle = TrialResult("t1", {"lr_schedule": "onecycle"}, _rows(tmp_path, "t1", [0.5, 0.99, 0.98]))
    constant = TrialResult("t2", {"lr_schedule": "none"}, _rows(tmp_path, "t2", [0.5, 0.97, 0.96]))
    summary = summarize("resnet_mnist", "val_acc", "max", {"epochs": 3}, [onecycle, constant])
    by_id = {t["trial_id"]: t for t in summary["trials"]}
    assert by_id["t1"]["best_epoch"] == 3 and by_id["t1"]["val_acc"] == 0.98
    assert by_id["t2"]["best_epoch"] == 2
    assert summary["best"]["trial_id"] == "t1" and summary["best"]["checkpoint"].endswith("checkpoint_epoch_0003")


def test_a_trial_stopped_mid_schedule_comes_after_the_finished_ones(tmp_path):
    stopped = TrialResult("t1", {"lr_schedule": "cosine"}, _rows(tmp_path, "t1", [0.9, 0.99]), "stopped_early")
    finished = TrialResult("t2", {"lr_schedule": "cosine"}, _rows(tmp_path, "t2", [0.5, 0.9, 0.98]))
    failed = TrialResult("t3", {"lr_schedule": "cosine"}, [], status="failed", reason="RuntimeError: boom")
    summary = summarize("resnet_mnist", "val_acc", "max", {"epochs": 3}, [failed, stopped, finished])
    assert [t["trial_id"] for t in summary["trials"]] == ["t2", "t1", "t3"]
    assert summary["best"]["trial_id"] == "t2"
    alone = summarize("resnet_mnist", "val_acc", "max", {"epochs": 3}, [stopped])
    assert alone["best"]["trial_id"] == "t1" and alone["best"]["epoch"] == 2


def test_a_diverged_trial_is_named_alike_whether_its_driver_raised_or_tune_stopped_it_first():
    from search.running.ends.failures import root_cause
    from search.running.study.endings import ending_of
    from trainables.foundation.errors import divergence_cause, divergence_message

    row = {"epoch": 2, "train_loss": float("nan"), "val_loss": float("inf"), "diverged": True}
    hp = {"lr": 10000.0, "optimizer": "sgd"}
    raised = f"ray::ImplicitFunc.train() (pid=1)\ntrainables.driver.NonFiniteLoss: {divergence_message(row, hp)}"
    stopped_by_tune = ending_of(2, 3, divergence=divergence_cause(row, hp))
    raised_by_its_driver = ending_of(2, 3, error=root_cause(raised))
    assert stopped_by_tune == raised_by_its_driver and stopped_by_tune.status == "failed"
    assert divergence_cause(row, hp).startswith(
        "NonFiniteLoss: training diverged: the loss became non-finite at epoch 2"
    )
    assert "with lr=1e+04, optimizer=sgd" in divergence_cause(row, hp)
