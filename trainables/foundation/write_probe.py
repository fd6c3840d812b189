"""Whether a run may write where `storage=` says, checked before anything is written. No Ray, no torch."""

from __future__ import annotations

import os
from pathlib import Path

from trainables.foundation.errors import UsageError
from trainables.foundation.storage import is_uri


def refuse_unwritable(storage: str) -> None:
    """Refuse a local `storage` this process cannot create and write into, without creating it."""
    if is_uri(storage):
        return
    import tempfile

    nearest = Path(storage)
    while not os.path.lexists(nearest) and nearest.parent != nearest:
        nearest = nearest.parent
    reason = None if nearest.is_dir() else "Not a directory"
    if reason is None:
        try:
            with tempfile.NamedTemporaryFile(dir=nearest, prefix=".search-write-probe-"):
                pass
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
    if reason:
        culprit = f" ({nearest})" if str(nearest) != storage else ""
        raise UsageError(
            f"storage={storage}: cannot write there: {reason}{culprit}; give a folder you can write to, or a URI"
        )
