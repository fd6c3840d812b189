"""How warm a trial starts, and Ray's door to start it warmer (docs/design.md, "A warm trial start")."""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import os
import sys
import tempfile
import time
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
# ... and at its first optimizer step, which imports torch's compiler (about 2 s of CPU).
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


def import_in_turn(modules: tuple[str, ...] = TRIAL_MODULES + FIRST_STEP_MODULES, folder: Path | None = None) -> float:
    """Import the `modules` this process lacks while holding one of its node's import turns (one a core): with more
    trial processes starting than cores (8 trials at `cpus=0.25` on 2 cores), the first ones start training in a
    quarter of the time instead of all of them together at the end. Returns the seconds spent waiting for a turn."""
    missing = [name for name in modules if name not in sys.modules]
    if not missing:
        return 0.0
    with one_turn(len(os.sched_getaffinity(0)), folder or turns_folder()) as waited:
        for name in missing:
            with contextlib.suppress(ImportError):  # what the process lacks is named where it is used
                importlib.import_module(name)
    return waited or 0.0


def turns_folder() -> Path:
    """The node's turns: one lock file a core, beside every Ray session of this user on the node."""
    return Path(tempfile.gettempdir()) / f"search-import-turns-{os.getuid()}"


@contextlib.contextmanager
def one_turn(turns: int, folder: Path):
    """Hold one of `turns` exclusive locks in `folder` (a free one, else wait for one) and yield the seconds waited.
    The kernel frees a lock when its holder dies: a killed trial never keeps a turn. Where the folder cannot be used,
    no turn is taken (yields None): the turns pace a start, they never stop one."""
    began = time.perf_counter()
    try:
        held = take_turn(turns, folder)
    except OSError:
        held = None
    try:
        yield (time.perf_counter() - began) if held else None
    finally:
        if held:
            held.close()  # closing the file frees its lock


def take_turn(turns: int, folder: Path):
    """The open lock file of the turn taken: the first free one, else the turn of this process's ticket (drawn in order
    of arrival: the waiters are dealt round the turns, as even as they come) once it is given back."""
    folder.mkdir(mode=0o700, exist_ok=True)
    for index in range(turns):
        handle = open(folder / f"{index}.lock", "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            handle.close()
    handle = open(folder / f"{draw_ticket(folder) % turns}.lock", "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)  # every turn taken: wait for the ticket's
    except BaseException:
        handle.close()
        raise
    return handle


def draw_ticket(folder: Path) -> int:
    """The next number of the folder's counter (a file of one number, read and rewritten under its own lock)."""
    with open(os.open(folder / "tickets", os.O_RDWR | os.O_CREAT, 0o600), "r+") as counter:
        fcntl.flock(counter, fcntl.LOCK_EX)
        text = counter.read().strip()
        number = int(text) if text.isdigit() else 0
        counter.seek(0)
        counter.truncate()
        counter.write(str(number + 1))
        return number
