"""Where an experiment lives: a local (or NFS-mounted) folder, or a `pyarrow.fs` URI; pyarrow only."""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from trainables.foundation.cache import cache_folder
from trainables.foundation.errors import UsageError

SEARCH_FILE = "search.json"  # the search's config, written before the first trial: marks an experiment folder
STUDY_FILE = "study.log"  # the search's Optuna study (search.running.study.record), which optuna-dashboard serves
URI_EXAMPLES = "s3://bucket/prefix, gs://bucket/prefix or file:///path"
CHECKPOINT_FOLDER_PREFIX = "train_"  # Ray Train runs (their checkpoints): readers download only what they need
LOCK_FILE, LEASE_FILE = "driver.lock", "driver.lease"  # the experiment's one writer (search.running.writer.lock)
CLOCK_FILE = "driver.lease.clock"  # stamped by the store when a driver asks the store's time (the lease's age)


def is_uri(location: str) -> bool:
    return "://" in location


def _split_query(uri: str) -> tuple[str, str]:
    base, _, query = uri.partition("?")
    return base.rstrip("/"), f"?{query}" if query else ""


def uri_join(uri: str, *parts: str) -> str:
    """`uri`/parts, keeping a query (e.g. ?endpoint_override=...) at the end where pyarrow expects it."""
    base, query = _split_query(uri)
    return "/".join([base, *(p.strip("/") for p in parts)]) + query


def uri_parent(uri: str) -> str:
    base, query = _split_query(uri)
    return base.rsplit("/", 1)[0] + query


def uri_name(uri: str) -> str:
    return _split_query(uri)[0].rsplit("/", 1)[-1]


def filesystem(location: str, key: str = "storage"):
    """(pyarrow filesystem, path on it) for a local folder or a URI; a URI pyarrow cannot open is one line."""
    import pyarrow.fs

    if not is_uri(location):
        return pyarrow.fs.LocalFileSystem(), str(Path(location).resolve())
    try:
        return pyarrow.fs.FileSystem.from_uri(location)
    except Exception as exc:  # ArrowInvalid for unknown schemes, OSError for missing drivers or credentials
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(
            f"{key}={location}: pyarrow cannot open it ({reason}); give a folder or a URI such as {URI_EXAMPLES}"
        ) from None


def _checkpoint_parts(location: str) -> tuple[str, ...]:
    """(`train_<id>`, `checkpoint_...`) of a checkpoint's location, else ()."""
    parts = PurePosixPath(location).parts[-2:]
    return parts if len(parts) == 2 and parts[0].startswith(CHECKPOINT_FOLDER_PREFIX) else ()


def relative_checkpoint(location: str) -> str:
    """A checkpoint's place as the experiment records it: relative to it, so that the experiment can move."""
    parts = _checkpoint_parts(location)
    return str(PurePosixPath(*parts)) if parts else location


def as_location(storage: str, fs_path: str) -> str:
    """The URI of `fs_path`, a path on the filesystem of `storage` (what Ray reports: the scheme stripped)."""
    if not is_uri(storage):
        return fs_path
    scheme = storage.split("://", 1)[0]
    return f"{scheme}://{fs_path}" + _split_query(storage)[1]


def exists(location: str) -> bool:
    import pyarrow.fs

    fs, path = filesystem(location)
    return fs.get_file_info(path).type != pyarrow.fs.FileType.NotFound


def read_text(location: str) -> str:
    fs, path = filesystem(location)
    with fs.open_input_stream(path) as stream:
        return stream.read().decode()


# Experiments held through a lease (search.running.writer.lock): a write under one first calls `fence.check()`.
_fences: dict[str, object] = {}


def set_fence(location: str, fence) -> None:
    """Writes under `location` are checked by `fence` (None: no longer)."""
    if fence is None:
        _fences.pop(location, None)
    else:
        _fences[location] = fence


def check_fence(location: str) -> None:
    """Raises when this process no longer holds the lease of the experiment `location` lies in."""
    for root, fence in list(_fences.items()):
        if location == root or location.startswith(root.rstrip("/") + "/"):
            fence.check()


def holds_fence(location: str) -> bool:
    """Whether this process holds the lease of the experiment `location` (its driver, while it writes)."""
    return location in _fences


def fence_lost(location: str) -> Exception | None:
    """What stopped this process from writing the experiment at `location` (its lease was taken), if anything."""
    fence = _fences.get(location)
    return None if fence is None else fence.lost


def write_text(location: str, text: str) -> None:
    check_fence(location)
    fs, path = filesystem(location)
    fs.create_dir(str(PurePosixPath(path).parent))
    with fs.open_output_stream(path) as stream:
        stream.write(text.encode())


def delete(location: str, folder: bool = False) -> None:
    check_fence(location)
    fs, path = filesystem(location)
    (fs.delete_dir if folder else fs.delete_file)(path)


def cache_root() -> Path:
    return cache_folder("experiments")


def working_folder(uri: str) -> Path:
    """The local folder where a driver of experiment `uri` on this machine writes (the same one every time)."""
    digest = hashlib.sha256(_split_query(uri)[0].encode()).hexdigest()[:10]
    return cache_root() / f"{uri_name(uri)}-{digest}"


def viewing_folder(uri: str) -> Path:
    """The local folder where readers of experiment `uri` on this machine download what they read."""
    return cache_root() / "viewing" / working_folder(uri).name


@dataclass(frozen=True)
class Experiment:
    """An experiment: `location` where it lives (a folder or a URI), `local` where this process reads and writes."""

    location: str
    local: Path

    @classmethod
    def at(cls, location: str, reading: bool = False) -> Experiment:
        """`reading`: for a reader, whose copy of a URI experiment is its own (`viewing_folder`)."""
        if is_uri(location):
            return cls(location, viewing_folder(location) if reading else working_folder(location))
        path = Path(location).expanduser().resolve()
        return cls(str(path), path)

    @property
    def remote(self) -> bool:
        return is_uri(self.location)

    @property
    def name(self) -> str:
        return uri_name(self.location) if self.remote else self.local.name

    @property
    def parent(self) -> str:
        return uri_parent(self.location) if self.remote else str(self.local.parent)

    def join(self, *parts: str) -> str:
        """Where a file of the experiment lives (a URI or a local path), for messages and for Ray."""
        return uri_join(self.location, *parts) if self.remote else str(self.local.joinpath(*parts))

    def upload(self, relative_paths: list[str]) -> None:
        """Copy these files of the working folder to the URI (nothing to do for a local experiment)."""
        if not self.remote:
            return
        import pyarrow.fs

        check_fence(self.location)
        fs, root = filesystem(self.location)
        local_fs = pyarrow.fs.LocalFileSystem()
        for relative in relative_paths:
            target = str(PurePosixPath(root, relative))
            fs.create_dir(str(PurePosixPath(target).parent))
            pyarrow.fs.copy_files(str(self.local / relative), target, local_fs, fs)

    def download(self, include_checkpoints: bool = False) -> None:
        """Fetch the experiment's files (checkpoints only when asked) into the working folder, over older copies."""
        if not self.remote:
            return
        import pyarrow.fs

        fs, root = filesystem(self.location)
        local_fs = pyarrow.fs.LocalFileSystem()
        for info in fs.get_file_info(pyarrow.fs.FileSelector(root, recursive=True)):
            relative = PurePosixPath(info.path).relative_to(PurePosixPath(root.rstrip("/")))
            if info.type != pyarrow.fs.FileType.File:
                continue
            if not include_checkpoints and relative.parts[0].startswith(CHECKPOINT_FOLDER_PREFIX):
                continue
            target = self.local / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            pyarrow.fs.copy_files(info.path, str(target), fs, local_fs)

    def checkpoint_location(self, recorded: str) -> str:
        """Where a recorded checkpoint is now (re-anchored here, so a moved experiment still finds it)."""
        parts = _checkpoint_parts(recorded)
        return self.join(*parts) if parts else recorded

    def checkpoint_exists(self):
        """A test of whether a recorded checkpoint is still in storage: one listing of the URI for all."""
        if not self.remote:
            return lambda recorded: os.path.isdir(self.checkpoint_location(recorded))
        import pyarrow.fs

        fs, root = filesystem(self.location)
        infos = fs.get_file_info(pyarrow.fs.FileSelector(root, recursive=True))
        folders = {
            as_location(self.location, info.path) for info in infos if info.type == pyarrow.fs.FileType.Directory
        }
        return lambda recorded: self.checkpoint_location(recorded) in folders

    def local_checkpoint(self, recorded: str) -> Path:
        """A checkpoint folder this process can open: downloaded into the working folder when it is a URI."""
        checkpoint = self.checkpoint_location(recorded)
        if not is_uri(checkpoint):
            return Path(checkpoint)
        import pyarrow.fs

        fs, path = filesystem(checkpoint, key="checkpoint")
        target = self.local / "checkpoints" / PurePosixPath(path).parent.name / PurePosixPath(path).name
        if not target.is_dir():
            partial = target.with_name(f".{target.name}.partial")
            shutil.rmtree(partial, ignore_errors=True)
            partial.mkdir(parents=True)
            pyarrow.fs.copy_files(path, str(partial), fs, pyarrow.fs.LocalFileSystem())
            os.replace(partial, target)
        return target


def claim(experiment: Experiment, name: str) -> None:
    """Create the experiment's folder (atomic: of two searches with one name, one wins), or refuse in one line."""
    taken = UsageError(f"name={name}: {experiment.location} already exists; choose another name=")
    if experiment.remote:
        if set(_names_under(experiment.location)) - {LEASE_FILE, CLOCK_FILE}:
            raise taken
        for path in experiment.local.iterdir() if experiment.local.is_dir() else ():
            if path.name != LOCK_FILE:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        experiment.local.mkdir(parents=True, exist_ok=True)
        return
    experiment.local.parent.mkdir(parents=True, exist_ok=True)
    try:
        experiment.local.mkdir()
    except FileExistsError:
        raise taken from None


def _names_under(location: str) -> list[str]:
    import pyarrow.fs

    fs, path = filesystem(location)
    infos = fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True))
    return [PurePosixPath(info.path).name for info in infos]


def folders_holding(fs, root: str, name: str, prefix: str = "") -> list[str]:
    """The paths of `root`'s folders named `prefix...` that hold a file `name` (empty: any)."""
    import pyarrow.fs

    infos = fs.get_file_info(pyarrow.fs.FileSelector(root, allow_not_found=True))
    folders = [i.path for i in infos if i.type == pyarrow.fs.FileType.Directory]
    folders = [path for path in folders if PurePosixPath(path).name.startswith(prefix)]
    if not name:
        return folders
    marked = fs.get_file_info([str(PurePosixPath(path, name)) for path in folders])
    return [path for path, info in zip(folders, marked) if info.type == pyarrow.fs.FileType.File]


def experiment_of(storage: str, name: str) -> Experiment:
    """Experiment `name` under `storage` (a folder or a URI)."""
    return Experiment.at(uri_join(storage, name) if is_uri(storage) else str(Path(storage) / name))


def open_for_reading(
    location: str, marker: str, missing: str = "not a finished experiment", reading: bool = True
) -> Experiment:
    """The experiment at `location` (downloaded from a URI); refused in one line when `marker` is not there."""
    experiment = Experiment.at(location, reading)
    if not exists(experiment.join(marker)):
        raise UsageError(f"{location}: {missing} (no {marker})")
    experiment.download()
    return experiment
