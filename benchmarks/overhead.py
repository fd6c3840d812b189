"""Where a trial's fixed time goes, from the timestamps the worker loop reports (trials in a row): the handoff from the
previous trial, process start, launch, data, model and DDP set-up, each epoch's checkpoint."""

from __future__ import annotations

SETUP_STEPS = ("setup_data_s", "setup_model_s", "setup_ddp_s")


def driver_to_first_step_s(first: dict) -> float:
    """A trial's driver start to its first training step (launch and setup), from its first row."""
    return first["launch_s"] + sum(first.get(step, 0.0) for step in SETUP_STEPS)


def trial_breakdown(rows: list[dict], previous: list[dict] | None) -> dict:
    first = rows[0]
    to_first_step = driver_to_first_step_s(first)
    figures = {
        "process_s": first.get("process_s", 0.0),
        "launch_s": first["launch_s"],
        **{step: first.get(step, 0.0) for step in SETUP_STEPS},
        "driver_to_first_step_s": to_first_step,
        "process_to_first_step_s": first.get("process_s", 0.0) + to_first_step,
        "checkpoint_s_per_epoch": sum(r.get("checkpoint_s", 0.0) for r in rows) / len(rows),
    }
    if previous:
        figures["handoff_s"] = first["started_at"] - to_first_step - last_report_at(previous)  # from the driver's start
        figures["last_report_to_next_first_step_s"] = first["started_at"] - last_report_at(previous)
    return figures


def last_report_at(rows: list[dict]) -> float:
    last = rows[-1]
    return last["started_at"] + last["epoch_s"] + last.get("checkpoint_s", 0.0)


def breakdown(trials: list[list[dict]]) -> dict:
    """Per-trial figures and their mean over the trials after the first (the first also pays Ray's cold start)."""
    per_trial = [trial_breakdown(rows, trials[i - 1] if i else None) for i, rows in enumerate(trials)]
    later = per_trial[1:] or per_trial
    keys = [k for k in later[0] if all(k in t for t in later)]
    mean = {k: sum(t[k] for t in later) / len(later) for k in keys}
    mean["fixed_overhead_s"] = mean.get("last_report_to_next_first_step_s", mean["driver_to_first_step_s"])
    return {"per_trial": per_trial, "mean_after_first": mean}
