"""What every process of a search's tree holds and spends, sampled from /proc (Linux): peak and current resident
memory and CPU time, by role (from the titles Ray gives its processes)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

RAY_TITLES = {  # Ray retitles a worker process `ray::<actor or task>` once it has work
    "ray::ImplicitFunc": "trial driver",
    "ray::TrainController": "train controller",
    "ray::RayTrainWorker": "training worker",
}
LONG_LIVED = ("search CLI", "raylet", "gcs_server")
TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _descendants(root: int) -> list[int]:
    seen, stack = [], [root]
    while stack:
        pid = stack.pop()
        seen.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*"):  # each thread's children
            with contextlib.suppress(OSError):
                stack += [int(child) for child in (task / "children").read_text().split()]
    return seen


def _status_kb(pid: int, field: str) -> int:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return next((int(line.split()[1]) for line in lines if line.startswith(field + ":")), 0)


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S  # utime, stime: fields 14 and 15 of stat


def _role(pid: int, root: int) -> str | None:
    """What the process is, from its title; None once it has exited."""
    if pid == root:
        return "search CLI"
    words = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    if not words[0]:
        return None
    if words[0].startswith("ray::"):
        title = words[0].split(".")[0]  # ray::PlacementGroupCleaner, ray::IDLE, ...
        return RAY_TITLES.get(title, title)
    if " " in words[0]:
        return words[0].split()[0]  # a title set in place, e.g. `ray-dashboard-StateHead-0 (python -c ...)`
    script = next((word for word in words[1:] if word.endswith(".py")), words[0])
    return Path(script).name  # raylet, gcs_server, dashboard.py, default_worker.py (not retitled yet), ...


class ProcessSampler(threading.Thread):
    """Every `interval` seconds: each process's role, peak RSS (VmHWM), CPU time and, for long-lived ones, RSS."""

    def __init__(self, root_pid: int, interval: float = 0.5):
        super().__init__(daemon=True)
        self.root, self.interval = root_pid, interval
        self.peaks: dict[int, tuple[str, int, float]] = {}  # pid -> (role, peak kB, first seen)
        self.cpu: dict[int, list[tuple[float, float]]] = {}  # pid -> [(time, CPU seconds so far)]
        self.timeline: list[tuple[float, dict[str, int]]] = []  # (time, role -> RSS kB) of long-lived processes
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        now, current = time.time(), {}
        for pid in _descendants(self.root):
            try:
                role = _role(pid, self.root)  # again each time: a process's title changes once it has work
                if role is None:
                    continue
                first_seen = self.peaks[pid][2] if pid in self.peaks else now
                self.peaks[pid] = (role, _status_kb(pid, "VmHWM"), first_seen)  # VmHWM: the kernel's high-water mark
                self.cpu.setdefault(pid, []).append((now, _cpu_s(pid)))
                if role in LONG_LIVED:
                    current[role] = current.get(role, 0) + _status_kb(pid, "VmRSS")
            except (OSError, ValueError, IndexError):
                continue  # the process ended between listing and reading
        self.timeline.append((now, current))

    def stop(self) -> None:
        self._stop_event.set()
        self.join()

    def peaks_by_role(self, role: str) -> list[float]:
        """Peak RSS (MiB) of every process of `role`, in the order they started."""
        return [kb / 1024 for _, kb in sorted((first, kb) for r, kb, first in self.peaks.values() if r == role)]

    def rss_at(self, when: float) -> dict[str, float]:
        """Long-lived processes' RSS (MiB) at the last sample before `when`."""
        before = [current for t, current in self.timeline if t <= when] or [self.timeline[0][1]]
        return {role: kb / 1024 for role, kb in before[-1].items()}

    def cores_by_role(self, windows: list[tuple[float, float]]) -> dict[str, float]:
        """Cores each role kept busy on average over the `windows` (start, end), largest first."""
        spent: dict[str, float] = {}
        for pid, samples in self.cpu.items():
            for start, end in windows:
                used = _cpu_at(samples, end) - _cpu_at(samples, start)
                if used > 0:
                    role = self.peaks[pid][0]
                    spent[role] = spent.get(role, 0.0) + used
        seconds = sum(end - start for start, end in windows) or 1.0
        return dict(sorted(((role, cpu / seconds) for role, cpu in spent.items()), key=lambda item: -item[1]))


def _cpu_at(samples: list[tuple[float, float]], when: float) -> float:
    """CPU seconds at the last sample before `when` (0 before the process was first seen)."""
    return next((cpu for t, cpu in reversed(samples) if t <= when), 0.0)
