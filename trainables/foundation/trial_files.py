"""A trial's own record, written before Tune hears of an epoch: `trial_<id>/result.json` (one JSON line per epoch,
after its checkpoint; rewritten whole) and `trial_<id>/end.json` (how it ended). pyarrow only; no Ray, no torch."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path, PurePosixPath

from trainables.foundation.storage import check_fence, filesystem, folders_holding, is_uri, uri_join

TRIAL_DIR_PREFIX = "trial_"
RESULT_FILE = "result.json"
END_FILE = "end.json"
ERROR_FILE = "error.txt"  # Tune's name for a failed trial's error, in the trial's folder
CHECKPOINT_KEY = "checkpoint_path"  # the checkpoint's location, added to each epoch's row beside its metrics
# A trial's configuration carries its id: Tune names a trial anew in every session, `resume` keeps it.
TRIAL_KEY = "trial_id"
# The one ending that is not final: a later session continues a trial the budget stopped.
STOPPED_BY_BUDGET = "stopped_by_budget"


def trial_key(tune_trial) -> str:
    """The search's id of a Tune trial (a trial run again by `resume` keeps it; Tune's own id is new each session)."""
    return tune_trial.config.get(TRIAL_KEY, tune_trial.trial_id)


class TrialFiles:
    """Reads and writes one trial's `result.json` and `end.json` (a folder or a URI)."""

    def __init__(self, experiment_dir: str, trial_id: str):
        self.experiment_dir, self.trial_id = experiment_dir, trial_id
        folder = f"{TRIAL_DIR_PREFIX}{trial_id}"
        self.fs, self.folder = filesystem(
            uri_join(experiment_dir, folder) if is_uri(experiment_dir) else str(PurePosixPath(experiment_dir, folder))
        )

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
        check_fence(self.experiment_dir)
        self.fs.create_dir(self.folder)
        partial = self._path(f".{name}.partial")
        with self.fs.open_output_stream(partial) as stream:
            stream.write(text.encode())
        self.fs.move(partial, self._path(name))

    def rows(self) -> list[dict]:
        """Every epoch recorded, in epoch order, one row per epoch (the first recorded wins)."""
        return parse_rows(self._read(RESULT_FILE) or "", self._path(RESULT_FILE))

    def append(self, rows: list[dict], row: dict) -> list[dict]:
        """`rows` and `row`, written back whole with every row the file holds now (none written over)."""
        if any(r.get("epoch") == row.get("epoch") for r in rows):
            return rows
        held = self.rows()
        known = {r.get("epoch") for r in held}
        grown = [*held, *(r for r in [*rows, row] if r.get("epoch") not in known)]  # the file's lines, then ours
        if row.get("epoch") not in known:
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

    def write_error(self, text: str) -> None:
        """A failed trial's error, where Tune's own copy lands only with its experiment snapshot (search.running.tuner:
        hourly at most), so that the file the live view names is there when it names it."""
        self._write_whole(ERROR_FILE, text)

    def final_ending(self) -> dict | None:
        """The trial's ending, unless a continuation may follow it: the budget's (a later session continues the
        trial) or ASHA's stop at a rung (its promotion variant resumes the trial; search.running.asha.study_asha)."""
        ending = self.ending()
        return None if ending and ending.get("status") in (STOPPED_BY_BUDGET, "stopped_early") else ending


def parse_rows(text: str, source: str = RESULT_FILE) -> list[dict]:
    """The rows of a result.json text; a line that does not parse (a copy cut short elsewhere) is skipped and logged."""
    rows: dict[int, dict] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            logging.getLogger("ray").warning("%s line %d is not a whole JSON row; skipped", source, number)
            continue
        if isinstance(row, dict) and isinstance(row.get("epoch"), int):
            rows.setdefault(row["epoch"], row)
    return [rows[epoch] for epoch in sorted(rows)]


def recorded_trial_ids(experiment_dir: str) -> list[str]:
    """Trials whose folder holds a result.json: every trial that reported an epoch."""
    fs, root = filesystem(experiment_dir)
    folders = folders_holding(fs, root, RESULT_FILE, TRIAL_DIR_PREFIX)
    return sorted(PurePosixPath(path).name.removeprefix(TRIAL_DIR_PREFIX) for path in folders)


def remove_empty_twins(folder) -> None:
    """Tune names a resumed trial's own folder `trial_<id>_<4 hex>` (the search's `trial_<id>` is taken: ASHA's
    promotion variant resumes a trial within one `run` or `resume`); left empty, it is removed: nothing looks like a
    trial."""
    for twin in Path(folder).glob(f"{TRIAL_DIR_PREFIX}*_????"):
        if twin.is_dir() and (twin.parent / twin.name[:-5]).is_dir() and not any(twin.iterdir()):
            twin.rmdir()
