"""Writing results so that readers never see a half-written file or folder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path


def write_json_atomically(path: Path, payload: dict) -> None:
    """Readers see either no file or the whole file, never a half-written one."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes((json.dumps(payload, indent=2, default=str) + "\n").encode())
    os.replace(tmp, path)


def staging_folder(out: Path) -> Path:
    """A fresh hidden folder beside `out` to build it in."""
    staging = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def publish_folder(staging: Path, out: Path) -> None:
    """Move the finished folder into place; an older one there is replaced only once the new one is whole."""
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, old)
        os.replace(staging, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, out)
