"""How warm a trial starts, and Ray's public doors to start it warmer.

A trial reports how many of its modules it found imported when it began (`warm_imports`, of TRIAL_MODULES) and its
place among its process's trials (`trial_of_process`): Tune hands a finished trial's process to the next trial
(`reuse_actors`), so every trial after a slot's first finds torch, Ray Train and the loop imported, its data
decoded and, on a GPU, its CUDA context made.

A slot's first trial: when a local Ray instance starts, Ray prestarts one idle worker process per CPU, and a Tune
trial actor can land in one (once it is up) only when it asks for the job's own runtime environment, so the job
gives none (what every worker must know reaches it through the raylet's environment). `RAY_preload_python_modules`,
Ray's door, makes every worker process Ray starts import the listed modules before it takes work; the search leaves
it to the user: measured on 2 cores and on an H100 (docs/design.md, "A warm trial start"), the search started later
with the trial's modules preloaded, since every prestarted worker (one per CPU) imports them at once while Ray and
Tune start, and Ray starts no more ahead once those are taken. Where a user sets it, the workers Ray starts ahead
find this project on their import path.

Pure logic; no Ray, no torch.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PRELOAD_ENV = "RAY_preload_python_modules"

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the folder holding `trainables` and `search`

# What a one-worker trial imports before its first step: torch (through the worker loop), the loop itself, and Ray
# Train's local mode with Tune's report callback (through the trial driver's TorchTrainer). Tune's trial process has
# imported ray.train before the trial begins.
TRIAL_MODULES = (
    "torch",
    "trainables.worker",
    "ray.train",
    "ray.train.torch",
    "ray.tune.integration.ray_train",
    "trainables.trainer",
)


def raylet_environment(environ: dict) -> dict:
    """What a local Ray instance's processes need beyond this process's environment: where the user preloads
    modules, this project on the import path (a prestarted worker imports before it joins the job, so before Ray
    gives it the driver's import path; appended, never in place of what the user's path holds)."""
    if not environ.get(PRELOAD_ENV):
        return {}
    path = [entry for entry in environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    return {"PYTHONPATH": os.pathsep.join([*path, str(PROJECT_ROOT)])}


def imports_found(modules: tuple[str, ...] = TRIAL_MODULES) -> list[str]:
    """Which of `modules` this process has already imported: a trial's own report of how warm it started."""
    return [name for name in modules if name in sys.modules]
