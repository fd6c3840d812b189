"""What `resume` needs before Tune restores a search: the settings (written twice when the search starts, read from
the copy when a kill cut search.json short), Tune's newest whole experiment snapshot (a damaged one set aside), and
whether Tune's own state is whole enough to restore at all."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import ray.tune

from search.results.files import write_json_atomically
from trainables.foundation.errors import SearchFailed
from trainables.foundation.storage import SEARCH_FILE, Experiment, read_bytes
from trainables.foundation.trial_files import EXPERIMENT_STATE_PREFIX

# Tune's restore copies the experiment's top-level .json files into its staging folder and copies them back every few
# seconds, not through a temporary name: a kill during such a copy can leave search.json cut short. A copy in a
# folder of its own, which Tune never copies, keeps the settings.
OWN_FOLDER = ".search"
SETTINGS_COPY = f"{OWN_FOLDER}/search.json"


def write_settings(experiment: Experiment, settings: dict) -> None:
    """search.json and its copy, each written through a temporary name, then uploaded when storage is a URI."""
    (experiment.local / OWN_FOLDER).mkdir(exist_ok=True)
    for name in (SEARCH_FILE, SETTINGS_COPY):
        write_json_atomically(experiment.local / name, settings)
    experiment.upload([SEARCH_FILE, SETTINGS_COPY])


def read_settings(folder: Path) -> dict:
    for name in (SEARCH_FILE, SETTINGS_COPY):
        try:
            return json.loads((folder / name).read_text())
        except (OSError, json.JSONDecodeError):
            continue
    raise SearchFailed(f"{folder / SEARCH_FILE}: the search's settings are damaged, and so is {folder / SETTINGS_COPY}")


def set_aside_damaged_snapshots(folder: Path) -> None:
    """Tune restores from its newest experiment snapshot; one cut short by a kill during Tune's copy is moved to
    .search/ (never deleted), so that Tune restores from the one before. The trials' own files hold what it lacks."""
    for snapshot in sorted(folder.glob(f"{EXPERIMENT_STATE_PREFIX}*.json"), reverse=True):
        try:
            json.loads(snapshot.read_text())
            return
        except (OSError, json.JSONDecodeError):
            (folder / OWN_FOLDER).mkdir(exist_ok=True)
            os.replace(snapshot, folder / OWN_FOLDER / f"damaged-{snapshot.name}")
            logging.getLogger("ray").warning("%s was cut short; Tune restores from the snapshot before it", snapshot)


TUNER_FILE = "tuner.pkl"  # Tune's, written once when a search starts, not through a temporary name


def tune_state_is_whole(experiment: Experiment) -> bool:
    """Whether Tune can restore the search: its tuner.pkl is there and whole (a kill while Tune writes it leaves a
    part, before any trial ran; a pickle ends with its STOP opcode). Trials record nothing before Tune's snapshot
    names them (trainables.foundation.trial_files), so without it there is nothing to restore."""
    if not ray.tune.Tuner.can_restore(experiment.location):
        return False
    try:
        return read_bytes(experiment.join(TUNER_FILE)).endswith(b".")
    except OSError:
        return False
