"""A node's import turns: more trial processes starting than cores import their heavy modules a core at a time
(docs/design.md, "A warm trial start")."""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import os
import sys
import tempfile
import time
from pathlib import Path

from trainables.foundation.resources import local_cpu_count

PATIENCE_S = 120.0  # the longest a process waits for a turn; then it imports without one
POLL_S = 0.05  # how often a waiter looks for a turn given back
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")  # a container's CPU quota: "max 100000" or "200000 100000"

_tried = False  # this process looked for its turn once: it never looks again, whatever it could not import


def import_in_turn(modules: tuple[str, ...], folder: Path | None = None) -> tuple[float, bool]:
    """Import the `modules` this process lacks while holding one of its node's import turns, one a core: with more
    trial processes starting than cores (8 trials at `cpus=0.25` on 2 cores), the first ones start training sooner
    instead of every one of them when the last one is ready. A process looks for a turn once; a warm one takes none.
    Returns the seconds spent before its imports (looking for a turn, waiting for one) and whether it held one."""
    global _tried
    missing = [name for name in modules if name not in sys.modules]
    if not missing or _tried:
        return 0.0, False
    _tried = True
    began = time.perf_counter()
    with one_turn(turns_here(), folder) as held:
        waited = time.perf_counter() - began
        for name in missing:
            with contextlib.suppress(Exception):  # a module that fails to import fails again where it is used
                importlib.import_module(name)
    return waited, held


def turns_here() -> int:
    """One turn a core this process may use, or a core of its container's CPU quota where that is fewer."""
    cores = local_cpu_count()
    with contextlib.suppress(OSError, ValueError):
        quota, period = CGROUP_CPU_MAX.read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, int(int(quota) / int(period))))
    return max(1, cores)


def turns_folder() -> Path:
    """The node's turns: one lock file a turn, in this user's own folder of the temporary folder."""
    return Path(tempfile.gettempdir()) / f"search-import-turns-{os.getuid()}"


@contextlib.contextmanager
def one_turn(turns: int, folder: Path | None = None, patience_s: float | None = None, waiting=None):
    """Hold one of `turns` exclusive locks in `folder` while the block runs; yields True, or False where none was
    taken: the folder is not this user's own (another user's, a link, open to others), cannot be used, or no turn was
    given back within `patience_s` (PATIENCE_S). The kernel frees a lock when its holder dies: a killed trial never
    keeps a turn. The turns pace a start, they never stop one. `waiting` is called once, the first time every turn is
    found taken while patience is left."""
    try:
        held = take_turn(turns, folder or turns_folder(), PATIENCE_S if patience_s is None else patience_s, waiting)
    except OSError:
        held = None
    try:
        yield held is not None
    finally:
        if held is not None:
            os.close(held)  # closing the file frees its lock


def take_turn(turns: int, folder: Path, patience_s: float = PATIENCE_S, waiting=None) -> int | None:
    """The descriptor of a free turn's lock file, looked for every POLL_S while every turn is taken (the first one
    given back is taken, whichever it is); None after `patience_s`."""
    directory = own_folder(folder)
    locks = []
    try:
        for index in range(max(1, turns)):
            locks.append(os.open(f"{index}.lock", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600, dir_fd=directory))
        deadline = time.monotonic() + patience_s
        while True:
            for lock in locks:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                locks.remove(lock)
                return lock
            if time.monotonic() >= deadline:
                return None
            if waiting is not None:
                waiting()
                waiting = None  # once
            time.sleep(POLL_S)
    finally:
        for lock in locks:
            os.close(lock)
        os.close(directory)


def own_folder(folder: Path) -> int:
    """A descriptor of `folder`, made for this user alone; OSError where it is not this user's alone: a folder in a
    shared temporary folder that another user made could hold every turn, or link a lock file to this user's files."""
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)  # a folder, not a link to one
    found = os.fstat(directory)
    if found.st_uid != os.getuid() or found.st_mode & 0o077:
        os.close(directory)
        raise OSError(f"{folder} is not this user's own folder")
    return directory
