"""A trial's checkpoints, `train_<id>/checkpoint_epoch_NNNN/`, complete once marked; pyarrow only, no Ray or torch."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from trainables.foundation.errors import UsageError
from trainables.foundation.storage import as_location, filesystem, folders_holding, is_uri, uri_join
from trainables.foundation.trial_files import CHECKPOINT_KEY

COMPLETE_MARKER = ".complete"
STATE_FILE = "state.json"  # trainables.training.STATE_FILE, named here without importing torch
MODEL_FILE = "model.pt"  # trainables.training.MODEL_FILE
FOLDER = re.compile(r"checkpoint_epoch_(\d{4,})$")


class CheckpointWriteFailed(OSError):
    """A checkpoint could not be written whole: the trial fails with this reason, and the folder never counts."""


def checkpoint_folder_name(epoch: int) -> str:
    return f"checkpoint_epoch_{epoch:04d}"


def complete_epochs(fs, root: str) -> list[int]:
    """The epochs of a run folder's checkpoints that hold their marker (written last, so they are whole)."""
    names = [PurePosixPath(path).name for path in folders_holding(fs, root, COMPLETE_MARKER)]
    return sorted(int(match.group(1)) for match in map(FOLDER.match, names) if match)


class CheckpointStore:
    def __init__(self, run_location: str, metric: str, mode: str, keep: int, fs=None):
        import pyarrow.fs

        self.fs, self.root = (fs, run_location) if fs is not None else filesystem(run_location)
        self.local_fs = pyarrow.fs.LocalFileSystem()
        self.metric, self.mode, self.keep = metric, mode, keep
        self.fs.create_dir(self.root)
        self.scores = {epoch: self._score_of(epoch) for epoch in self.complete_epochs()}

    def path_of(self, epoch: int) -> str:
        """The checkpoint's path on its filesystem (what Ray reports: a URI without its scheme)."""
        return str(PurePosixPath(self.root, checkpoint_folder_name(epoch)))

    def complete_epochs(self) -> list[int]:
        return complete_epochs(self.fs, self.root)

    def _state_of(self, epoch: int) -> dict:
        with self.fs.open_input_stream(str(PurePosixPath(self.path_of(epoch), STATE_FILE))) as stream:
            return json.loads(stream.read().decode())

    def _score_of(self, epoch: int) -> float | None:
        value = self._state_of(epoch).get("metrics", {}).get(self.metric)
        return value if isinstance(value, (int, float)) else None

    def rows_after(self, epoch: int) -> list[dict]:
        """The metrics each complete checkpoint newer than `epoch` was saved with, and its path (CHECKPOINT_KEY)."""
        return [
            {**self._state_of(e).get("metrics", {}), "epoch": e, CHECKPOINT_KEY: self.path_of(e)}
            for e in self.complete_epochs()
            if e > epoch
        ]

    def save(self, write: Callable[[Path], None], epoch: int, score: float | None) -> str:
        """Write the epoch's checkpoint with `write(folder)` (staged locally for a URI), mark it complete; its path."""
        import pyarrow.fs

        target = self.path_of(epoch)
        try:
            self.fs.delete_dir_contents(target, missing_dir_ok=True)  # a copy an earlier run of this epoch cut short
            self.fs.create_dir(target)
            if isinstance(self.fs, pyarrow.fs.LocalFileSystem):
                write(Path(target))
            else:
                with tempfile.TemporaryDirectory(prefix="checkpoint-") as staging:
                    write(Path(staging))
                    pyarrow.fs.copy_files(staging, target, self.local_fs, self.fs)
            with self.fs.open_output_stream(str(PurePosixPath(target, COMPLETE_MARKER))) as stream:
                stream.write(b"")  # last: without it the folder is not a checkpoint
        except (OSError, RuntimeError) as exc:  # torch.save raises RuntimeError for a write that fails
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CheckpointWriteFailed(
                f"could not write the checkpoint of epoch {epoch} to {target}: {reason} "
                "(is the disk full, or the folder gone?)"
            ) from None
        self.scores[epoch] = score
        for pruned in epochs_to_delete(self.scores, self.mode, self.keep, latest=epoch):
            self.fs.delete_dir(self.path_of(pruned))
            del self.scores[pruned]
        return target

    @contextmanager
    def latest(self):
        """The latest complete checkpoint as a local folder (downloaded when the store is a URI), or None."""
        epochs = self.complete_epochs()
        if not epochs:
            yield None
            return
        source = self.path_of(epochs[-1])
        if isinstance(self.fs, type(self.local_fs)):
            yield Path(source)
            return
        import pyarrow.fs

        folder = tempfile.mkdtemp(prefix="checkpoint-")
        try:
            pyarrow.fs.copy_files(source, folder, self.fs, self.local_fs)
            yield Path(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def damage(location: str) -> str | None:
    """What is wrong with a checkpoint folder (marker, state.json, model.pt), naming the file; None when whole."""
    import zipfile

    import pyarrow.fs

    fs, folder = filesystem(location, key="checkpoint")
    where = lambda name: f"{location.rstrip('/')}/{name}"  # noqa: E731
    if fs.get_file_info(folder).type != pyarrow.fs.FileType.Directory:
        return f"{location} is missing"
    if fs.get_file_info(str(PurePosixPath(folder, COMPLETE_MARKER))).type != pyarrow.fs.FileType.File:
        return f"{location}: not a complete checkpoint (no {COMPLETE_MARKER} marker: its writing was cut short)"
    try:
        with fs.open_input_stream(str(PurePosixPath(folder, STATE_FILE))) as stream:
            json.loads(stream.read().decode())
    except FileNotFoundError:
        return f"{where(STATE_FILE)} is missing"
    except (OSError, ValueError) as exc:
        return f"{where(STATE_FILE)} is damaged ({type(exc).__name__})"
    try:
        with fs.open_input_file(str(PurePosixPath(folder, MODEL_FILE))) as handle, zipfile.ZipFile(handle) as archive:
            archive.infolist()
    except FileNotFoundError:
        return f"{where(MODEL_FILE)} is missing"
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as exc:
        return f"{where(MODEL_FILE)} is damaged: cut short or not a torch checkpoint ({exc})"
    return None


def refuse_damaged(location: str, remedy: str) -> None:
    problem = damage(location)
    if problem:
        raise UsageError(f"damaged checkpoint: {problem}; {remedy}")


def refuse_damaged_in(experiment_dir: str) -> None:
    """Every complete checkpoint of every trial of an experiment, checked before `resume` trains from them."""
    fs, root = filesystem(experiment_dir)
    for run in folders_holding(fs, root, "", "train_"):
        for epoch in complete_epochs(fs, run):
            path = str(PurePosixPath(run, checkpoint_folder_name(epoch)))
            refuse_damaged(
                as_location(experiment_dir, path), "delete that folder to resume from the trial's checkpoint before it"
            )


def epochs_to_delete(scores: dict[int, float | None], mode: str, keep: int, latest: int) -> list[int]:
    """Ray Train's rule: keep the `keep` best by score (a missing score ranks last), and always the latest."""

    def rank(epoch: int):
        score = scores[epoch]
        return (1, 0.0, -epoch) if score is None else (0, -score if mode == "max" else score, -epoch)

    ranked = sorted(scores, key=rank)
    return sorted(epoch for epoch in ranked[keep:] if epoch != latest)


def run_location(experiment_dir: str, run_name: str) -> str:
    """Where a trial's run folder lives inside the experiment (a folder or a URI)."""
    return uri_join(experiment_dir, run_name) if is_uri(experiment_dir) else str(Path(experiment_dir) / run_name)
