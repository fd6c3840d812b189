"""The project's benchmarks (`python -m benchmarks`, and one module per study): see benchmarks/README.md."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent


def portable(path: str | os.PathLike) -> str:
    """A path as a results file records it, relative to the repository or to `~`: no figure names the machine."""
    resolved = Path(os.path.expanduser(str(path))).resolve()
    if resolved.is_relative_to(REPOSITORY):
        return str(resolved.relative_to(REPOSITORY))
    return f"~/{resolved.relative_to(home)}" if resolved.is_relative_to(home := Path.home().resolve()) else str(path)


def git(folder: Path, *args: str) -> subprocess.CompletedProcess | None:
    """`git ARGS` run in `folder` (None: git cannot run here)."""
    try:
        return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None


def code_state(folder: Path = REPOSITORY) -> dict:
    """HEAD and whether tracked files differ from it, or $COMMIT (dirty unknown) in a tree without git (the device)."""
    if os.environ.get("COMMIT"):
        return {"code": os.environ["COMMIT"], "code_dirty": None}
    head, status = git(folder, "rev-parse", "HEAD"), git(folder, "status", "--porcelain", "-uno")
    if not (head and status) or head.returncode or status.returncode:
        return {"code": "unknown", "code_dirty": None}
    return {"code": head.stdout.strip(), "code_dirty": bool(status.stdout.strip())}
