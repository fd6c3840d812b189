"""How warm a trial starts, and Ray's door to start it warmer (docs/design.md, "A warm trial start")."""

from __future__ import annotations

import os
import sys
from pathlib import Path

PRELOAD_ENV = "RAY_preload_python_modules"

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the folder holding `trainables` and `search`

# What a one-worker trial imports before its first step: torch, the loop, Ray Train's local mode and Tune's callback.
TRIAL_MODULES = (
    "torch",
    "trainables.worker",
    "ray.train",
    "ray.train.torch",
    "ray.tune.integration.ray_train",
    "trainables.trainer",
)
# ... and at its first optimizer step, which imports torch's compiler (about 2 s of CPU): imported in its turn too.
FIRST_STEP_MODULES = ("torch._dynamo",)


def raylet_environment(environ: dict) -> dict:
    """Where the user preloads modules: this project appended to a local Ray instance's import path."""
    if not environ.get(PRELOAD_ENV):
        return {}
    path = [entry for entry in environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    return {"PYTHONPATH": os.pathsep.join([*path, str(PROJECT_ROOT)])}


def imports_found(modules: tuple[str, ...] = TRIAL_MODULES) -> list[str]:
    """Which of `modules` this process has already imported: a trial's own report of how warm it started."""
    return [name for name in modules if name in sys.modules]
