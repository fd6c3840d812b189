"""What every benchmark writes beside its figures: when, on what, with which torch."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

import torch

from search.results.files import write_json_atomically


def write_report(path: str | Path, figures: dict) -> dict:
    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    report = {"date": time.strftime("%Y-%m-%d"), "machine": machine, "torch": torch.__version__, **figures}
    write_json_atomically(Path(path), report)  # a reader never sees half a report
    return report
