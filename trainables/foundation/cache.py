"""The project's cache folder, `$XDG_CACHE_HOME/search` (default `~/.cache/search`)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_folder(*parts: str) -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache, "search", *parts)
