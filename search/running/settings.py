"""The search's settings, `search.json`: written when the search starts (and when it grows), read by `resume`,
`export` and `report`. Written through a temporary name, so a reader sees the old file or the new one."""

from __future__ import annotations

import json
from pathlib import Path

from search.results.files import write_json_atomically
from trainables.foundation.errors import SearchFailed
from trainables.foundation.storage import SEARCH_FILE, Experiment


def write_settings(experiment: Experiment, settings: dict) -> None:
    """search.json, then uploaded when storage is a URI."""
    write_json_atomically(experiment.local / SEARCH_FILE, settings)
    experiment.upload([SEARCH_FILE])


def read_settings(folder: Path) -> dict:
    try:
        return json.loads((folder / SEARCH_FILE).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SearchFailed(f"{folder / SEARCH_FILE}: the search's settings cannot be read ({exc})") from None
