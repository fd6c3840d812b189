"""How warm a trial starts (part `warm`) beside a fresh import measured in the same run: the smallest search, one-worker
trials with `reuse_actors=True`, Tune's default `False` and Ray's module preload, the gap between DDP trials."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.overhead import breakdown, driver_to_first_step_s
from benchmarks.search_runs import resnet_words, run_search, trial_rows
from trainables.foundation.warm import PRELOAD_ENV, TRIAL_MODULES

FRESH_IMPORT = "import torch, torchvision, ray, ray.train.torch"


def fresh_import_s(repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", FRESH_IMPORT], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def trials_figures(run: dict) -> dict:
    trials = trial_rows(run["experiment"])
    firsts, figures = [rows[0] for rows in trials], {"wall_s": run["wall_s"], "trials": len(trials)}
    figures.update({key: [row.get(key) for row in firsts] for key in ("warm_imports", "trial_of_process")})
    figures["driver_to_first_step_s"] = [driver_to_first_step_s(row) for row in firsts]
    figures["process_s"] = [row.get("process_s", 0.0) for row in firsts]
    return figures


def measure(root: str, storage: Path, trials: int = 6) -> dict:
    common, before = "data.val_limit=256 epochs=1 grace=1", fresh_import_s()
    smallest = run_search(storage, "smallest", resnet_words(root, f"trials=1 data.limit=256 {common}"))
    one_worker = resnet_words(root, f"trials={trials} data.limit=512 workers=1 cpus=1 concurrency=2 {common}")
    reused = trials_figures(run_search(storage, "reuse", one_worker))
    fresh = trials_figures(run_search(storage, "no-reuse", one_worker, module="benchmarks.reuse_off"))
    preloaded = trials_figures(run_search(storage, "preload", one_worker, env={PRELOAD_ENV: ",".join(TRIAL_MODULES)}))
    ddp = resnet_words(root, f"trials=3 data.limit=512 workers=2 cpus=1 concurrency=1 {common}")
    ddp_gap = breakdown(trial_rows(run_search(storage, "ddp", ddp)["experiment"]))["mean_after_first"]
    after = fresh_import_s()
    fresh_import = (before + after) / 2
    return {
        "fresh_import": FRESH_IMPORT,
        "fresh_import_s": {"before": before, "after": after},
        "smallest_search_s": smallest["wall_s"],
        "smallest_vs_fresh_import": smallest["wall_s"] / fresh_import,
        "one_worker": {"reuse_actors": reused, "reuse_actors=False": fresh, "preloaded": preloaded},
        "reuse_true_vs_false_wall": reused["wall_s"] / fresh["wall_s"],
        "preloaded_vs_not_wall": preloaded["wall_s"] / reused["wall_s"],
        "ddp_trials": 3,
        "ddp_start_gap_s": ddp_gap["fixed_overhead_s"],
        "ddp_start_gap_vs_fresh_import": ddp_gap["fixed_overhead_s"] / fresh_import,
        "ddp_mean_after_first": ddp_gap,
    }
