"""The benchmark's process sampler: roles from process titles, CPU time per role over time windows (real
processes, no Ray; milliseconds)."""

import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.processes import ProcessSampler, _role


def test_roles_come_from_the_root_pid_scripts_and_binaries(tmp_path):
    script = tmp_path / "log_monitor.py"
    script.write_text("import time; time.sleep(30)\n")
    children = [subprocess.Popen([sys.executable, "-u", str(script)]), subprocess.Popen(["sleep", "30"])]
    try:
        assert _role(os.getpid(), os.getpid()) == "search CLI"
        assert role_once_started(children[0].pid, "log_monitor.py") == "log_monitor.py"
        assert role_once_started(children[1].pid, "sleep") == "sleep"
    finally:
        for child in children:
            child.kill()
            child.wait()


def test_a_process_that_has_exited_has_no_role():
    child = subprocess.Popen(["true"])
    try:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert _role(child.pid, os.getpid()) is None  # a zombie, not yet reaped: its title is empty
    finally:
        child.wait()


def role_once_started(pid: int, expected: str, timeout_s: float = 10.0) -> str | None:
    """The child's role, read again until it shows `expected` (a child just started may not have exec'd yet)."""
    deadline = time.monotonic() + timeout_s
    role = _role(pid, os.getpid())
    while role != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        role = _role(pid, os.getpid())
    return role


def test_cores_by_role_counts_only_cpu_spent_inside_the_windows():
    sampler = ProcessSampler(root_pid=os.getpid())
    sampler.peaks = {1: ("training worker", 0, 0.0), 2: ("raylet", 0, 0.0), 3: ("trial driver", 0, 5.0)}
    sampler.cpu = {
        1: [(0.0, 0.0), (10.0, 18.0), (20.0, 36.0)],  # 1.8 cores all along
        2: [(0.0, 1.0), (10.0, 1.5), (20.0, 2.0)],  # 0.05 cores
        3: [(15.0, 4.0), (20.0, 4.0)],  # started after the first window, 4 s of CPU before its first sample
    }
    assert sampler.cores_by_role([(0.0, 10.0)]) == {"training worker": 1.8, "raylet": 0.05}
    both = sampler.cores_by_role([(0.0, 10.0), (10.0, 20.0)])
    assert list(both) == ["training worker", "trial driver", "raylet"]  # largest first
    assert both["trial driver"] == 4.0 / 20.0


def test_a_busy_child_process_shows_its_cpu_time():
    """The sampler gives a busy child between two samples at least the CPU seconds it is known to have spent there,
    however loaded the machine (the second sample waits for 0.5 s of the child's CPU time, not for a clock time)."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    sampler = ProcessSampler(root_pid=os.getpid())
    try:
        role = role_once_started(busy.pid, Path(sys.executable).name)
        sampler.sample()
        spent = cpu_s(busy.pid)
        while cpu_s(busy.pid) < spent + 0.5:
            time.sleep(0.05)
        sampler.sample()
    finally:
        busy.kill()
        busy.wait()
    (first, _), (second, _) = sampler.cpu[busy.pid]
    assert sampler.cores_by_role([(first, second)]).get(role, 0.0) * (second - first) >= 0.49


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
