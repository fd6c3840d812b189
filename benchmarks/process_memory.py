"""Peak and current resident memory of a process tree, sampled from /proc (Linux), by role.

Roles come from the process titles Ray gives its workers: the trial driver (`ray::ImplicitFunc`), the Train
controller, the training workers (`ray::RayTrainWorker`); the CLI itself and Ray's long-lived daemons are tracked
over time to see whether anything grows from trial to trial.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

ROLES = {
    "trial driver": "ImplicitFunc",
    "train controller": "TrainController",
    "training worker": "RayTrainWorker",
    "raylet": "raylet",
    "gcs_server": "gcs_server",
}
LONG_LIVED = ("search CLI", "raylet", "gcs_server")


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _descendants(root: int) -> list[int]:
    seen, stack = [], [root]
    while stack:
        pid = stack.pop()
        seen.append(pid)
        stack += _children(pid)
    return seen


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _role(pid: int, root: int) -> str | None:
    if pid == root:
        return "search CLI"
    title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return next((role for role, marker in ROLES.items() if marker in title), None)


class MemorySampler(threading.Thread):
    """Every `interval` seconds: each tracked process's peak RSS (VmHWM) and, for long-lived ones, current RSS."""

    def __init__(self, root_pid: int, interval: float = 0.5):
        super().__init__(daemon=True)
        self.root, self.interval = root_pid, interval
        self.peaks: dict[int, tuple[str, int, float]] = {}  # pid -> (role, peak kB, first seen)
        self.timeline: list[tuple[float, dict[str, int]]] = []  # (time, role -> RSS kB) of long-lived processes
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        now, current = time.time(), {}
        for pid in _descendants(self.root):
            try:
                role = _role(pid, self.root)
                if role is None:
                    continue
                first_seen = self.peaks[pid][2] if pid in self.peaks else now
                self.peaks[pid] = (role, _status_kb(pid, "VmHWM"), first_seen)  # VmHWM: the kernel's high-water mark
                if role in LONG_LIVED:
                    current[role] = current.get(role, 0) + _status_kb(pid, "VmRSS")
            except (OSError, ValueError):
                continue  # the process ended between listing and reading
        self.timeline.append((now, current))

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def peaks_by_role(self, role: str) -> list[float]:
        """Peak RSS (MiB) of every process of `role`, in the order they started."""
        rows = sorted((first, kb) for r, kb, first in self.peaks.values() if r == role)
        return [kb / 1024 for _, kb in rows]

    def rss_at(self, when: float) -> dict[str, float]:
        """Long-lived processes' RSS (MiB) at the last sample before `when`."""
        before = [current for t, current in self.timeline if t <= when] or [self.timeline[0][1]]
        return {role: kb / 1024 for role, kb in before[-1].items()}
