"""Memory over a search: every process's resident memory sampled from /proc while a 20-trial search of 2-worker
trials runs; does the last trial's peak differ from the first's, and do the long-lived processes grow?"""

from __future__ import annotations

from pathlib import Path

from benchmarks import overhead
from benchmarks.search_runs import resnet_words, run_search, trial_rows


def measure(root: str, storage: Path, trials: int) -> dict:
    words = f"data.limit=512 data.val_limit=256 trials={trials} concurrency=1 epochs=1 grace=1 workers=2 cpus=1"
    run = run_search(storage, "memory", resnet_words(root, words), sample_processes=True)
    sampler, trial_list = run["processes"], trial_rows(run["experiment"])
    early = sampler.rss_at(overhead.last_report_at(trial_list[1]))  # after the second trial
    late = sampler.rss_at(overhead.last_report_at(trial_list[-1]))
    return {
        "trials": trials,
        "peak_rss_mib": {
            "trial_driver": first_last_max(sampler.peaks_by_role("trial driver")),
            "training_worker": first_last_max(sampler.peaks_by_role("training worker")),
            "train_controller_max": max(sampler.peaks_by_role("train controller"), default=0.0),
        },
        "long_lived_rss_mib": {
            role: {
                "after_trial_2": early.get(role, 0.0),
                "after_last_trial": late.get(role, 0.0),
                "growth": late.get(role, 0.0) - early.get(role, 0.0),
            }
            for role in sorted(set(early) | set(late))
        },
    }


def first_last_max(peaks: list[float]) -> dict:
    return {"first": peaks[0], "last": peaks[-1], "max": max(peaks), "count": len(peaks), "in_start_order": peaks}
