"""A node's import turns: more trial processes starting than cores import their heavy modules a core at a time
(docs/design.md, "A warm trial start")."""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import os
import stat
import sys
import tempfile
import time
from pathlib import Path

from trainables.foundation.resources import local_cpu_count

PATIENCE_S = 120.0  # the longest a process waits for a turn; then it imports without one
POLL_S = 0.05  # how often a waiter looks for a turn given back

_tried = False  # this process took its turn once: it never waits again, whatever it could not import


def import_in_turn(modules: tuple[str, ...], folder: Path | None = None) -> float:
    """Import the `modules` this process lacks while holding one of its node's import turns, one a core: with more
    trial processes starting than cores (8 trials at `cpus=0.25` on 2 cores), the first ones start training sooner
    instead of every one of them when the last one is ready. Once a process, a warm one taking none. Returns the
    seconds spent before its imports (looking for a turn, waiting for one)."""
    global _tried
    missing = [name for name in modules if name not in sys.modules]
    if not missing or _tried:
        return 0.0
    _tried = True
    began = time.perf_counter()
    with one_turn(local_cpu_count(), folder or turns_folder()):
        waited = time.perf_counter() - began
        for name in missing:
            with contextlib.suppress(ImportError):  # what the process lacks is named where it is used
                importlib.import_module(name)
    return waited


def turns_folder() -> Path:
    """The node's turns: one lock file a turn, in this user's own folder of the temporary folder."""
    return Path(tempfile.gettempdir()) / f"search-import-turns-{os.getuid()}"


@contextlib.contextmanager
def one_turn(turns: int, folder: Path, patience_s: float = PATIENCE_S, waiting=None):
    """Hold one of `turns` exclusive locks in `folder` while the block runs; yields True, or False where none was
    taken: the folder is not this user's own (another user's, a link, open to others), cannot be written, or no turn
    was given back within `patience_s`. The kernel frees a lock when its holder dies: a killed trial never keeps a turn.
    The turns pace a start, they never stop one. `waiting` is called once when every turn is taken."""
    try:
        held = take_turn(turns, folder, patience_s, waiting)
    except OSError:
        held = None
    try:
        yield held is not None
    finally:
        if held is not None:
            held.close()  # closing the file frees its lock


def take_turn(turns: int, folder: Path, patience_s: float = PATIENCE_S, waiting=None):
    """The open lock file of a free turn, looked for every POLL_S while every turn is taken (so the first one given
    back is taken, whichever it is); None after `patience_s`."""
    own_folder(folder)
    deadline = time.monotonic() + patience_s
    while True:
        for index in range(max(1, turns)):
            handle = os.fdopen(os.open(folder / f"{index}.lock", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600), "w")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return handle
            except BlockingIOError:
                handle.close()
        if time.monotonic() >= deadline:
            return None
        if waiting is not None:
            waiting, told = None, waiting
            told()
        time.sleep(POLL_S)


def own_folder(folder: Path) -> None:
    """Make `folder` for this user alone, or raise OSError where it is not: a folder in a shared temporary folder
    that another user made could hold every turn, or link a lock file to one of this user's files."""
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    found = os.lstat(folder)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
        raise OSError(f"{folder} is not this user's own folder")
