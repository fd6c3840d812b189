"""A trial's own record in its experiment folder: what `resume`, the summary, `report` and `export` believe.

Tune snapshots its experiment state every few seconds; a trial's files are written as the trial goes, so after a
kill they can be newer than that snapshot. They are the truth:

    trial_<id>/result.json   one JSON line per epoch, written by the trial after that epoch's checkpoint is complete
                             and before Tune hears of the epoch; only ever grows (rewritten whole under a temporary
                             name, then moved into place, so a reader never sees half a line)
    trial_<id>/end.json      how Tune ended the trial (completed, stopped_early by ASHA, failed and why), written by
                             the search driver the moment Tune ends it
    train_<id>/checkpoint_epoch_NNNN/   the checkpoints, each complete once its `.complete` marker is there

pyarrow only (a folder or a URI): both the search driver and the trials import this module; no Ray, no torch.
"""

from __future__ import annotations

import json
import time
from pathlib import PurePosixPath

from trainables.foundation.storage import filesystem, is_uri, uri_join

TRIAL_DIR_PREFIX = "trial_"
RESULT_FILE = "result.json"
END_FILE = "end.json"
CHECKPOINT_KEY = "checkpoint_path"  # the checkpoint's location, added to each epoch's row beside its metrics
EXPERIMENT_STATE_PREFIX = "experiment_state-"  # Tune's snapshot files at the experiment's top level
# The search's own folder in an experiment, which Tune never copies into or over. In a local folder it holds a whole
# copy of Tune's newest snapshot (Tune rewrites its own in place, so a kill can cut it short): search.running.tune_state
OWN_FOLDER = ".search"


def trial_location(experiment_dir: str, trial_id: str) -> str:
    return uri_join(experiment_dir, f"{TRIAL_DIR_PREFIX}{trial_id}") if is_uri(experiment_dir) else \
        str(PurePosixPath(experiment_dir, f"{TRIAL_DIR_PREFIX}{trial_id}"))


class TrialFiles:
    """Reads and writes one trial's `result.json` and `end.json` (a folder or a URI)."""

    def __init__(self, experiment_dir: str, trial_id: str):
        self.experiment_dir, self.trial_id = experiment_dir, trial_id
        self.fs, self.folder = filesystem(trial_location(experiment_dir, trial_id))

    def _path(self, name: str) -> str:
        return str(PurePosixPath(self.folder, name))

    def _read(self, name: str) -> str | None:
        try:
            with self.fs.open_input_stream(self._path(name)) as stream:
                return stream.read().decode()
        except OSError:  # not there (yet)
            return None

    def _write_whole(self, name: str, text: str) -> None:
        """Readers see the old file or the new one, never a part: written beside it, then moved over it."""
        self.fs.create_dir(self.folder)
        partial = self._path(f".{name}.partial")
        with self.fs.open_output_stream(partial) as stream:
            stream.write(text.encode())
        self.fs.move(partial, self._path(name))

    def rows(self) -> list[dict]:
        """Every epoch recorded, in epoch order, one row per epoch (the first recorded wins)."""
        return parse_rows(self._read(RESULT_FILE) or "")

    def append(self, rows: list[dict], row: dict) -> list[dict]:
        """`rows` (what this file holds) and `row`, written back whole; an epoch already recorded is kept as it was."""
        if any(r.get("epoch") == row.get("epoch") for r in rows):
            return rows
        grown = [*rows, row]
        self._write_whole(RESULT_FILE, "".join(json.dumps(r, default=str) + "\n" for r in grown))
        return grown

    def ending(self) -> dict | None:
        text = self._read(END_FILE)
        try:
            return json.loads(text) if text else None
        except json.JSONDecodeError:
            return None

    def write_ending(self, status: str, error: str | None = None) -> None:
        self._write_whole(END_FILE, json.dumps({"status": status, "error": error, "at": time.time()}) + "\n")


def parse_rows(text: str) -> list[dict]:
    rows: dict[int, dict] = {}
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue  # never written by this project (it writes whole files); skipped rather than trusted
        if isinstance(row, dict) and isinstance(row.get("epoch"), int):
            rows.setdefault(row["epoch"], row)
    return [rows[epoch] for epoch in sorted(rows)]


def recorded_trial_ids(experiment_dir: str) -> list[str]:
    """Trials whose folder holds a result.json: every trial that reported an epoch."""
    import pyarrow.fs

    fs, root = filesystem(experiment_dir)
    ids = []
    for info in fs.get_file_info(pyarrow.fs.FileSelector(root, allow_not_found=True)):
        name = PurePosixPath(info.path).name
        if info.type == pyarrow.fs.FileType.Directory and name.startswith(TRIAL_DIR_PREFIX):
            if fs.get_file_info(str(PurePosixPath(info.path, RESULT_FILE))).type == pyarrow.fs.FileType.File:
                ids.append(name.removeprefix(TRIAL_DIR_PREFIX))
    return sorted(ids)


def tune_knows(experiment_dir: str, trial_id: str) -> bool:
    """Whether the experiment snapshot `resume` restores from names this trial: then `resume` runs it again, and its
    files decide what that run does. In a local folder that is the whole copy the driver keeps in .search/ (when it
    keeps one); on a URI, Tune's newest (an object store writes objects whole). The newest by name: one per session,
    named by its start. Read as text: only the trial id is looked for."""

    fs, root = filesystem(experiment_dir)
    kept = _snapshots(fs, str(PurePosixPath(root, OWN_FOLDER))) if not is_uri(experiment_dir) else []
    snapshots = kept or _snapshots(fs, root)
    if not snapshots:
        return False
    try:
        with fs.open_input_stream(max(snapshots, key=lambda path: PurePosixPath(path).name)) as stream:
            return trial_id in stream.read().decode(errors="replace")
    except OSError:
        return False


def _snapshots(fs, folder: str) -> list[str]:
    import pyarrow.fs

    return [info.path for info in fs.get_file_info(pyarrow.fs.FileSelector(folder, allow_not_found=True))
            if PurePosixPath(info.path).name.startswith(EXPERIMENT_STATE_PREFIX)]  # fmt: skip


def wait_until_tune_knows(experiment_dir: str, trial_id: str, timeout_s: float = 60.0, every_s: float = 0.1) -> bool:
    """Before a trial records its first epoch: wait (a second or two at most, in practice none: a first epoch takes
    longer than Tune's snapshot period) until Tune's snapshot names it, so that no kill can leave a trial whose
    files `resume` would find but Tune would not know to run again."""
    deadline = time.monotonic() + timeout_s
    while not tune_knows(experiment_dir, trial_id):
        if time.monotonic() > deadline:
            return False
        time.sleep(every_s)
    return True
