"""How well the validation split ranks a search's trials: every trial's last checkpoint evaluated on the test split.

    python -m benchmarks.val_vs_test EXPERIMENT_DIR...

Prints, per trial, how it ended, its last epoch's val_acc and that checkpoint's test_acc, and per experiment the rank
correlation of the two among the trials that ran to the end. A research tool for benchmarks/README.md: the search
itself never reads the test split before the end.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.fs

from search.results.testset import test_accuracy
from trainables.checkpoints import checkpoint_folder_name, complete_epochs
from trainables.foundation.config import RunConfig
from trainables.foundation.space import load_space
from trainables.foundation.storage import Experiment
from trainables.foundation.trial_files import RESULT_FILE, TRIAL_DIR_PREFIX, parse_rows


def last_checkpoint(experiment: Path, trial_id: str) -> tuple[int, Path] | None:
    """(epoch, folder) of the trial's newest checkpoint that holds its completion marker."""
    run_folder = experiment / f"train_{trial_id}"
    epochs = complete_epochs(pyarrow.fs.LocalFileSystem(), str(run_folder))
    return (epochs[-1], run_folder / checkpoint_folder_name(epochs[-1])) if epochs else None


def ranks(values: list[float]) -> list[float]:
    """Rank of each value (0 = smallest); tied values share the mean of their ranks (600 validation digits tie
    often)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            result[order[position]] = (start + end) / 2
        start = end + 1
    return result


def spearman(a: list[float], b: list[float]) -> float | None:
    """Pearson's correlation of the ranks (None below three pairs, or when either side is all ties)."""
    if len(a) < 3:
        return None
    ra, rb = ranks(a), ranks(b)
    mean = (len(a) - 1) / 2
    cov = sum((x - mean) * (y - mean) for x, y in zip(ra, rb))
    var_a, var_b = (sum((x - mean) ** 2 for x in r) for r in (ra, rb))
    return cov / (var_a * var_b) ** 0.5 if var_a and var_b else None


def measure(folder: Path) -> list[dict]:
    settings = json.loads((folder / "search.json").read_text())
    run = RunConfig.from_dict(settings["run"])
    space = load_space(run.space)
    summary = json.loads((folder / "summary.json").read_text())
    rows = []
    for trial in summary["trials"]:
        found = last_checkpoint(folder, trial["trial_id"])
        if found is None:
            continue
        epoch, checkpoint = found
        rows_text = (folder / f"{TRIAL_DIR_PREFIX}{trial['trial_id']}" / RESULT_FILE).read_text()
        val = next(row["val_acc"] for row in parse_rows(rows_text) if row["epoch"] == epoch)
        test = test_accuracy(
            {"config": trial["config"], "checkpoint": str(checkpoint)}, run, space, Experiment.at(str(folder))
        )
        rows.append(
            {
                "trial_id": trial["trial_id"],
                "status": trial["status"],
                "epoch": epoch,
                "val_acc": val,
                "test_acc": test["test_acc"],
                "config": trial["config"],
                "chosen": trial["trial_id"] == summary["best"]["trial_id"],
            }
        )
    return rows


def main(folders: list[str]) -> None:
    for folder in map(Path, folders):
        rows = measure(folder)
        print(f"{folder.name}:")
        for row in sorted(rows, key=lambda r: (-r["epoch"], -r["val_acc"])):
            hp = row["config"]
            print(
                f"  {row['trial_id']} {row['status']:<13} epoch {row['epoch']}  val {row['val_acc']:.4f}  test "
                f"{row['test_acc']:.4f}{'  chosen' if row['chosen'] else ''}   lr {hp.get('lr', 0):.3f} wd "
                f"{hp.get('weight_decay', 0):.1e} ls {hp.get('label_smoothing', 0):.2f} shift {hp.get('shift')} "
                f"batch {hp.get('batch_size')}"
            )
        finished = [row for row in rows if row["status"] == "completed"]
        rho = spearman([r["val_acc"] for r in finished], [r["test_acc"] for r in finished])
        print(
            f"  trials run to the end: {len(finished)}, rank correlation of val and test among them: "
            f"{'n/a' if rho is None else f'{rho:+.2f}'}"
        )
        print(json.dumps({"experiment": folder.name, "trials": rows}), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
