"""The search's settings, written twice when the search starts and read from the copy when a kill cut search.json
short. Tune's own state files: search.running.tune_state."""

from __future__ import annotations

import json
from pathlib import Path

from search.results.files import write_json_atomically
from trainables.foundation.errors import SearchFailed
from trainables.foundation.storage import SEARCH_FILE, Experiment
from trainables.foundation.trial_files import OWN_FOLDER

# Tune's restore copies the experiment's top-level .json files into its staging folder and copies them back every few
# seconds, not through a temporary name: a kill during such a copy can leave search.json cut short. A copy in a
# folder of its own, which Tune never copies, keeps the settings.
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
