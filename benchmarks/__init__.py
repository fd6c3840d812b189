"""The project's benchmarks (`python -m benchmarks`, and one module per study): see benchmarks/README.md."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent


def portable(path: str | os.PathLike) -> str:
    """A path as a results file records it: relative to the repository when inside it, else with the home folder as
    `~`, so that no figure names the machine it was measured on."""
    resolved = Path(os.path.expanduser(str(path))).resolve()
    if resolved.is_relative_to(REPOSITORY):
        return str(resolved.relative_to(REPOSITORY))
    home = Path.home().resolve()
    return f"~/{resolved.relative_to(home)}" if resolved.is_relative_to(home) else str(path)


def git_commit() -> str:
    """The code a result was measured with: HEAD, or $COMMIT where the tree came without its git folder (the device
    machine)."""
    if os.environ.get("COMMIT"):
        return os.environ["COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPOSITORY, capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"
