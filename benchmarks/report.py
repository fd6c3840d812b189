"""What every benchmark writes beside its figures: when, on what, with which torch."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import torch


def write_report(path: str | Path, figures: dict) -> dict:
    report = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
              "torch": torch.__version__, **figures}  # fmt: skip
    Path(path).write_text(json.dumps(report, indent=2) + "\n")
    return report
