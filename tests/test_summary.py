import json

from search.files import write_json_atomically
from search.summary import TrialRecord, best_epoch_row, format_table, summarize


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
        TrialRecord("t1", {"lr": 0.1}, _rows(tmp_path, "t1", [0.5, 0.6, 0.8])),
        TrialRecord("t2", {"lr": 0.2}, _rows(tmp_path, "t2", [0.3])),
        TrialRecord("t3", {"lr": 9.0}, [{"epoch": 1, "val_acc": 0.1, "diverged": True}]),
        TrialRecord("t4", {"lr": 0.3}, [], error="RuntimeError: boom"),
    ]
    summary = summarize("resnet_mnist", "val_acc", "max", {"epochs": 3}, records)
    by_id = {t["trial_id"]: t for t in summary["trials"]}
    assert by_id["t1"]["status"] == "completed"
    assert by_id["t2"]["status"] == "stopped_early" and by_id["t2"]["epochs_run"] == 1
    assert by_id["t3"]["status"] == "failed" and "non-finite" in by_id["t3"]["error"]
    assert by_id["t4"]["status"] == "failed" and by_id["t4"]["error"] == "RuntimeError: boom"
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
