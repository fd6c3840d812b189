"""The repeats of one configuration (`trials=N` with every searched key pinned: trainables.foundation.repeats) as
what they measure: the mean and standard deviation of the validation metric and the test accuracy across the seeds,
not one "best" seed's figure. Pure logic, no Ray: the test accuracy of each repeat comes from a function given."""

from __future__ import annotations

from collections.abc import Callable

from search.results.score import is_finite_number
from trainables.foundation.repeats import SEED_KEY, spread

TEST_KEY = "test_acc"


def are_repeats(summary: dict) -> bool:
    """Whether the summary's trials are repeats of one configuration: two or more, each with its own seed."""
    trials = summary.get("trials") or []
    return len(trials) > 1 and all(SEED_KEY in trial["config"] for trial in trials)


def add_repeats(summary: dict, test_of: Callable[[dict], dict | None]) -> None:
    """For repeats: each repeat's `test_acc` (from `test_of(trial)`, the best's own already measured), and the
    summary's `repeats`: {"count", METRIC: {"mean", "std", "n"}, "test_acc": {...}} over the repeats with a
    checkpoint. Nothing for a search."""
    if not are_repeats(summary):
        return
    best = summary.get("best") or {}
    for trial in summary["trials"]:
        if not trial.get("checkpoint"):
            continue
        tested = best if trial["trial_id"] == best.get("trial_id") and TEST_KEY in best else test_of(trial) or {}
        trial.update({key: tested[key] for key in (TEST_KEY, "test_samples") if key in tested})
    summary["repeats"] = repeats_of(summary)


def repeats_of(summary: dict) -> dict:
    """The mean and standard deviation of the metric and the test accuracy across the repeats that have them."""
    metric = summary["metric"]
    figures = {"count": len(summary["trials"])}
    for key in (metric, TEST_KEY):
        values = [trial[key] for trial in summary["trials"] if is_finite_number(trial.get(key))]
        if values:
            figures[key] = spread(values)
    return figures


def repeats_line(summary: dict) -> str:
    """The table's last line for repeats: `repeats: 3 of one configuration: val_acc 0.9367 ± 0.0012, ...`."""
    figures = summary.get("repeats")
    if not figures:
        return ""
    measured = [
        f"{key} {figures[key]['mean']:.4f} ± {figures[key]['std']:.4f} (n={figures[key]['n']})"
        for key in (summary["metric"], TEST_KEY)
        if key in figures
    ]
    return f"repeats: {figures['count']} seeds of one configuration, mean ± standard deviation: {', '.join(measured)}"
