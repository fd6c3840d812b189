"""The result of a search: `summary.json` and the table printed at the end. Pure logic, no Ray."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from search.results.pareto import front_of
from search.results.repeat_spread import repeats_line
from search.results.score import anneals, is_finite_number, standing_row
from trainables.foundation.trial_files import CHECKPOINT_KEY

SUMMARY_FILE = "summary.json"


@dataclass
class TrialResult:
    """What one trial left behind: its hyperparameters, every epoch it reported, and how it ended as the study holds
    it (search.running.study.endings: `status`, and `reason`, the error of a failed trial)."""

    trial_id: str
    config: dict
    history: list[dict] = field(default_factory=list)
    status: str = "completed"
    reason: str | None = None

    @property
    def error(self) -> str | None:
        return self.reason if self.status == "failed" else None


def trial_row(result: TrialResult, metric: str, mode: str, checkpoint_exists=os.path.isdir) -> dict | None:
    """The epoch that stands for a trial (search.results.score) among those whose checkpoint is still in storage."""

    def usable(row: dict) -> bool:
        return bool(row.get(CHECKPOINT_KEY)) and checkpoint_exists(row[CHECKPOINT_KEY])

    return standing_row(result.history, result.config, metric, mode, usable)


def best_rank(row: dict, config: dict, epochs: int, mode: str, metric: str) -> tuple:
    """The order of the trials' standing rows for the best, highest first: a trial stopped in the middle of an
    annealing schedule comes after those that finished one, then the metric decides, then more epochs; among equal
    ranks the earlier trial stands first (the summary's sort is stable). Pure: the replays choose with it too."""
    unfinished = anneals(config) and int(row.get("epoch", 0)) < epochs
    value = row[metric] if mode == "max" else -row[metric]
    return (not unfinished, value, int(row.get("epoch", 0)))


def summarize(
    space: str,
    metric: str,
    mode: str,
    run: dict,
    results: list[TrialResult],
    checkpoint_exists=os.path.isdir,
    objectives: list[dict] = (),
) -> dict:
    """The summary of `results`, trials best first, each one's `best_epoch` the epoch that stands for it
    (`trial_row`; `checkpoint_exists`: whether a checkpoint is still in storage, Ray deletes all but the best few).
    With several `objectives` ({name, mode}, the primary first): each trial's values there, and the Pareto front."""
    epochs = run["epochs"]
    ranked = []
    for result in results:
        row = trial_row(result, metric, mode, checkpoint_exists)
        entry = {
            "trial_id": result.trial_id,
            "status": result.status,
            "config": result.config,
            "epochs_run": max((int(r.get("epoch", 0)) for r in result.history), default=0),
            metric: row[metric] if row else None,
            "best_epoch": row["epoch"] if row else None,
            "checkpoint": row[CHECKPOINT_KEY] if row else None,
            "training_s": round(sum(r.get("epoch_s") or 0.0 for r in result.history), 3),
            "life_s": round(max((r.get("time_total_s") or 0.0 for r in result.history), default=0.0), 3),
            "error": result.error,
            **({"stopped": result.reason} if result.status == "stopped_by_budget" else {}),
        }
        if len(objectives) > 1:
            entry["objectives"] = {o["name"]: row.get(o["name"]) if row else None for o in objectives}
        ranked.append(((1, best_rank(row, result.config, epochs, mode, metric)) if row else (0,), entry, result, row))
    ranked.sort(key=lambda item: item[0], reverse=True)  # stable: trials without a checkpoint keep their order
    best = None
    if ranked and ranked[0][3] is not None:
        _, _, best_trial, best_row = ranked[0]
        best = {
            "trial_id": best_trial.trial_id,
            "config": best_trial.config,
            "metrics": {k: v for k, v in best_row.items() if k != CHECKPOINT_KEY},
            "epoch": best_row["epoch"],
            "checkpoint": best_row[CHECKPOINT_KEY],
        }
    trials = [entry for _, entry, _, _ in ranked]
    summary = {"space": space, "metric": metric, "mode": mode, "run": run, "best": best, "trials": trials}
    if len(objectives) > 1:
        summary.update(objectives=list(objectives), front=front_of(trials, list(objectives)))
    return summary


def read_summary(experiment: str | Path) -> dict:
    return json.loads((Path(experiment) / SUMMARY_FILE).read_text())


def format_table(summary: dict, limit: int = 20) -> str:
    metric = summary["metric"]
    names = sorted({k for t in summary["trials"] for k in t["config"]})
    costs = [o["name"] for o in summary.get("objectives", [])[1:]]  # a multi-objective search's other objectives
    header = ["trial", "status", "epochs", metric, *costs, *names]
    rows = [header]
    for trial in summary["trials"][:limit]:
        value = trial[metric]
        rows.append(
            [
                trial["trial_id"],
                trial["status"],
                str(trial["epochs_run"]),
                f"{value:.4f}" if is_finite_number(value) else "-",
                *(_short((trial.get("objectives") or {}).get(n, "-")) for n in costs),
                *(_short(trial["config"].get(n)) for n in names),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    hidden = len(summary["trials"]) - limit
    if hidden > 0:
        lines.append(f"... {hidden} more trials in summary.json")
    if summary.get("repeats"):
        lines.append(repeats_line(summary))
    return "\n".join(lines)


def format_front(summary: dict) -> str:
    """The Pareto front, most accurate first: each member's objectives, test accuracy and checkpoint."""
    names = [o["name"] for o in summary["objectives"]]
    lines = [f"Pareto front of {objectives_words(summary)}: {len(summary['front'])} of {len(summary['trials'])} trials"]
    for member in summary["front"]:
        values = "  ".join(f"{n}={_short(member['objectives'][n])}" for n in names)
        test = f"  test_acc={member['test_acc']:.4f}" if "test_acc" in member else ""
        lines.append(f"  trial {member['trial_id']} epoch {member['epoch']}  {values}{test}  {member['checkpoint']}")
    return "\n".join(lines)


def objectives_words(summary: dict) -> str:
    """`val_acc (max)`, or every objective of a search of several: `val_acc (max), params (min)`."""
    objectives = summary.get("objectives") or [{"name": summary["metric"], "mode": summary["mode"]}]
    return ", ".join(f"{o['name']} ({o['mode']})" for o in objectives)


def _short(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
