"""What this process fetches into folders other processes share (the shipped samples' cache, a data root, torch's hub
cache): built aside in a folder of its own, put in place in one step only where nothing is yet (another process's kept
when it came first), and recorded with the folders made on the way. A refused run takes back exactly that record
(`taken_back_on_refusal`): never what another process put in place, even in a folder that was missing when the run's
checks began, and never what another process reads (`hold`: a shared flock it keeps until it exits). Standard library
only."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

from trainables.foundation.errors import UsageError

_placed: list[Path] = []  # what this process put in place, in order
_made: list[Path] = []  # the folders this process made on the way to them, in order
TAKEN = {errno.EEXIST, errno.ENOTEMPTY}  # a rename or link refused because something is there
USERS = ".in-use"  # in a folder put in place: the file its readers hold a shared lock on
_held: dict[Path, int] = {}  # what this process reads, each with the descriptor of its shared lock
NO_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}  # a store without hard links


def make_folders(path: Path | str) -> Path:
    """`path` and the folders on the way to it made where missing (mkdir -p), each one made here recorded: a folder
    another process made first is its own."""
    path = Path(path).expanduser().absolute()
    for folder in reversed([path, *path.parents]):
        if folder.is_dir():
            continue
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        _made.append(folder)
    return path


@contextlib.contextmanager
def staging_beside(target: Path):
    """A fresh hidden folder of this process's own beside `target` (on its filesystem, so that `put_in_place` is one
    rename), removed with whatever is left in it on the way out."""
    target = Path(target).expanduser().absolute()
    for attempt in range(3):  # a folder on the way, made by another, may be taken back by it meanwhile (when empty)
        make_folders(target.parent)
        try:
            staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
            break
        except FileNotFoundError:
            if attempt == 2:
                raise
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def put_in_place(built: Path, target: Path) -> bool:
    """Move `built` (a file or a folder made beside `target`) to `target` in one step when nothing is there; when
    something is (another process came first), keep it and drop `built`. True when this process put `target` there."""
    built, target = Path(built), Path(target).expanduser().absolute()
    try:
        if built.is_dir():
            if target.exists():  # a rename would replace an empty folder there
                raise FileExistsError(errno.EEXIST, "exists", str(target))
            os.rename(built, target)  # refused when a folder with anything in it is there
        else:
            _link_or_move(built, target)
    except OSError as exc:
        if exc.errno not in TAKEN:
            raise
        shutil.rmtree(built, ignore_errors=True) if built.is_dir() else built.unlink(missing_ok=True)
        return False
    _placed.append(target)
    return True


def _link_or_move(built: Path, target: Path) -> None:
    """A file into place: a hard link (refused when a file is there), else on a store without hard links a rename
    after a look (the one step left open there)."""
    try:
        os.link(built, target)
    except OSError as exc:
        if exc.errno not in NO_LINKS:
            raise
        if target.exists():
            raise FileExistsError(errno.EEXIST, "exists", str(target)) from None
        os.replace(built, target)
        return
    built.unlink()


def _lock_file(path: Path) -> Path:
    return path / USERS if path.is_dir() else path


def hold(path: Path | str) -> bool:
    """This process reads `path` (a folder or file in a shared cache) until it exits: a shared flock, so that the
    process that put it there keeps it when it is refused. False when `path` is gone (taken back meanwhile): build it
    again."""
    path = Path(path).expanduser().absolute()
    if path in _held:
        return True
    try:
        descriptor = os.open(_lock_file(path), os.O_RDONLY | (os.O_CREAT if path.is_dir() else 0), 0o644)
    except OSError:
        return False
    fcntl.flock(descriptor, fcntl.LOCK_SH)  # waits while a take-back removes it
    if not path.exists():
        os.close(descriptor)
        return False
    _held[path] = descriptor
    return True


def _take_back(path: Path) -> None:
    """Remove `path`, which this process put in place, unless another process holds it (reads it)."""
    descriptor = _held.pop(path, None)
    if descriptor is not None:
        os.close(descriptor)  # this process's own hold: a flock of its own would refuse its exclusive one
    try:
        probe = os.open(_lock_file(path), os.O_RDONLY)
    except OSError:  # no lock file: nobody has held it
        probe = None
    try:
        if probe is not None:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held under the removal: a new reader waits, then sees
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    except BlockingIOError:
        pass  # another process reads it: kept
    finally:
        if probe is not None:
            os.close(probe)


def placed_since(mark: int) -> list[Path]:
    """What this process put in place since `mark` (a `len(placed_since(0))` taken before)."""
    return list(_placed[mark:])


@contextlib.contextmanager
def taken_back_on_refusal():
    """Run the checks inside; when one refuses (UsageError), remove what this process put in place meanwhile, then the
    folders it made on the way that nothing else is in: a refused run leaves no folder behind, the caches included,
    and never removes what another process put there, though it came while the checks ran (a search started at once
    that unpacked the same sample)."""
    placed, made = len(_placed), len(_made)
    try:
        yield
    except UsageError:
        for path in reversed(_placed[placed:]):
            _take_back(path)
        for folder in reversed(_made[made:]):
            with contextlib.suppress(OSError):  # another process's file in it: kept, with the folder
                folder.rmdir()
        del _placed[placed:], _made[made:]
        raise
