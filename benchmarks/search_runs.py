"""Run `python -m search run` as a user would and read back what each trial reported, in start order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.processes import ProcessSampler
from trainables.foundation.trial_files import TrialFiles

REPO = Path(__file__).resolve().parents[1]
# resnet_mnist with nothing searched, as the Ray Train tutorial trains it (the recipe every benchmark has
# measured): constant lr, plain momentum, the 7x7 stride-2 stem, no augmentation.
FIXED_HP = "lr=0.02 momentum=0.9 weight_decay=0.0001 label_smoothing=0 shift=0 nesterov=false lr_schedule=none"
FIXED_HP += " stem=imagenet"


def resnet_words(root: str, words: str, fixed: bool = True) -> list[str]:
    """The key=value words of a resnet_mnist search on the data at `root`, the tutorial's recipe fixed unless not."""
    return ["space=resnet_mnist", f"data.root={root}", *words.split(), *(FIXED_HP.split() if fixed else [])]


def run_search(
    storage: Path, name: str, overrides: list[str], sample_processes=False, module="search", env: dict | None = None
) -> dict:
    """Run one search (`python -m module`) to completion: its experiment folder, wall time and processes' samples."""
    command = [sys.executable, "-m", module, "run", f"storage={storage}", f"name={name}", *overrides]
    start, started_at, env = time.perf_counter(), time.time(), {**os.environ, **(env or {})}
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    sampler = ProcessSampler(process.pid) if sample_processes else None
    if sampler:
        sampler.start()
    _, stderr = process.communicate()
    if sampler:
        sampler.stop()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}): {stderr.strip()[-2000:]}")
    wall = time.perf_counter() - start
    return dict(experiment=storage / name, wall_s=wall, processes=sampler, started_at=started_at, ended_at=time.time())


def trial_rows(experiment: Path) -> list[list[dict]]:
    """Every trial's result rows (one per epoch), trials ordered by when their first epoch started."""
    trials = [TrialFiles(str(experiment), entry["trial_id"]).rows() for entry in summary_of(experiment)["trials"]]
    return sorted(trials, key=lambda rows: rows[0]["started_at"])


def summary_of(experiment: Path) -> dict:
    return json.loads((experiment / "summary.json").read_text())
