"""Whether a run may write its experiment where `storage=` says, checked before anything is written: a refused run
leaves no folder behind. No Ray, no torch."""

from __future__ import annotations

import os
from pathlib import Path

from trainables.foundation.errors import UsageError
from trainables.foundation.storage import is_uri


def refuse_unwritable(storage: str) -> None:
    """A local `storage` folder must be one this process can create and write into, checked without creating it: the
    nearest folder of its path that exists must be a folder this process can write a file into (a real file, removed
    at once, which also holds for root and read-only mounts); nothing is left behind when the run is refused. A URI is
    checked by the nodes that write to it."""
    if is_uri(storage):
        return
    import tempfile

    nearest = Path(storage)
    while not os.path.lexists(nearest) and nearest.parent != nearest:
        nearest = nearest.parent
    culprit = f" ({nearest})" if str(nearest) != storage else ""
    if not nearest.is_dir():
        raise UsageError(
            f"storage={storage}: cannot write there: Not a directory{culprit}; give a folder you can write to, or a URI"
        )
    try:
        with tempfile.NamedTemporaryFile(dir=nearest, prefix=".search-write-probe-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UsageError(
            f"storage={storage}: cannot write there: {reason}{culprit}; give a folder you can write to, or a URI"
        ) from None
