"""The result of a search: `summary.json` and the table printed at the end. Pure logic, no Ray."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

SUMMARY_FILE = "summary.json"
CHECKPOINT_KEY = "checkpoint_path"  # added to each epoch's metrics by Tune's TuneReportCallback


@dataclass
class TrialRecord:
    """What one trial left behind: its hyperparameters, every epoch it reported, its error if any."""

    trial_id: str
    config: dict
    history: list[dict] = field(default_factory=list)
    error: str | None = None


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _better(a: float, b: float, mode: str) -> bool:
    return a > b if mode == "max" else a < b


def best_epoch_row(history: list[dict], metric: str, mode: str, checkpoint_exists=os.path.isdir) -> dict | None:
    """The epoch with the best metric whose checkpoint is still in storage (earliest among ties)."""
    best = None
    for row in history:
        value = row.get(metric)
        if not _finite(value) or not row.get(CHECKPOINT_KEY) or not checkpoint_exists(row[CHECKPOINT_KEY]):
            continue
        if best is None or _better(value, best[metric], mode):
            best = row
    return best


def epochs_run(record: TrialRecord) -> int:
    return max((int(r.get("epoch", 0)) for r in record.history), default=0)


def divergence(record: TrialRecord) -> str | None:
    """Why a trial whose loss became NaN/inf failed (ASHA may stop it before its driver raises)."""
    for row in record.history:
        if row.get("diverged"):
            return f"loss became non-finite at epoch {row.get('epoch')} (train_loss={row.get('train_loss')})"
    return None


def outcome(failed: bool, epochs_run: int, epochs: int) -> str:
    """The status word of an ended trial, shared by summary.json, the live view and TensorBoard."""
    if failed:
        return "failed"
    if epochs_run == 0:
        return "not_started"
    return "completed" if epochs_run >= epochs else "stopped_early"


def trial_status(record: TrialRecord, epochs: int) -> str:
    return outcome(bool(record.error or divergence(record)), epochs_run(record), epochs)


def summarize(space: str, metric: str, mode: str, run: dict, records: list[TrialRecord],
              checkpoint_exists=os.path.isdir) -> dict:  # fmt: skip
    """`checkpoint_exists`: whether a checkpoint location is still in storage (Ray deletes all but the best few)."""
    epochs = run["epochs"]
    trials = []
    best_trial, best_row = None, None
    for record in records:
        row = best_epoch_row(record.history, metric, mode, checkpoint_exists)
        trials.append(
            {
                "trial_id": record.trial_id,
                "status": trial_status(record, epochs),
                "config": record.config,
                "epochs_run": epochs_run(record),
                metric: row[metric] if row else None,
                "best_epoch": row["epoch"] if row else None,
                "checkpoint": row[CHECKPOINT_KEY] if row else None,
                "training_s": round(sum(r.get("epoch_s") or 0.0 for r in record.history), 3),
                "life_s": round(max((r.get("time_total_s") or 0.0 for r in record.history), default=0.0), 3),
                "error": record.error or divergence(record),
            }
        )
        if row and (best_row is None or _better(row[metric], best_row[metric], mode)):
            best_trial, best_row = record, row
    trials.sort(key=lambda t: _sort_key(t[metric], mode))
    best = None
    if best_trial is not None:
        best = {
            "trial_id": best_trial.trial_id,
            "config": best_trial.config,
            "metrics": {k: v for k, v in best_row.items() if k != CHECKPOINT_KEY},
            "epoch": best_row["epoch"],
            "checkpoint": best_row[CHECKPOINT_KEY],
        }
    return {"space": space, "metric": metric, "mode": mode, "run": run, "best": best, "trials": trials}


def _sort_key(value, mode: str):
    if not _finite(value):
        return (1, 0.0)
    return (0, -value if mode == "max" else value)


def read_summary(experiment: str | Path) -> dict:
    return json.loads((Path(experiment) / SUMMARY_FILE).read_text())


def format_table(summary: dict, limit: int = 20) -> str:
    metric = summary["metric"]
    names = sorted({k for t in summary["trials"] for k in t["config"]})
    header = ["trial", "status", "epochs", metric, *names]
    rows = [header]
    for trial in summary["trials"][:limit]:
        value = trial[metric]
        rows.append(
            [
                trial["trial_id"],
                trial["status"],
                str(trial["epochs_run"]),
                f"{value:.4f}" if _finite(value) else "-",
                *(_short(trial["config"].get(n)) for n in names),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    hidden = len(summary["trials"]) - limit
    if hidden > 0:
        lines.append(f"... {hidden} more trials in summary.json")
    return "\n".join(lines)


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)
