"""The clock of a search's terminal lines (`[ 0m17s] ...`): it counts from the command's start (`python -m search`:
when its process started, where /proc says; a search from Python: when `search.api.run` is called), so that the
seconds the user waits for Python's imports and Ray's start show. Unstarted, each live view counts from its own start.
"""

from __future__ import annotations

import os
import time

_began: list[float] = []  # the command's start, in time.monotonic() seconds, once the command marked it
MOST_BEFORE_MAIN_S = 120.0  # a process older than this at the command's start was not started for it (a notebook)


def process_age_s(stat: str, uptime: str, ticks_per_s: float) -> float | None:
    """Seconds since the process started: its start time (/proc/self/stat's 22nd field, in clock ticks after boot)
    against the time since boot (/proc/uptime); None when that is no age a command could have at its start."""
    start_ticks = int(stat.rsplit(")", 1)[1].split()[19])  # the command's name may hold spaces and parentheses
    age = float(uptime.split()[0]) - start_ticks / ticks_per_s
    return age if 0 <= age <= MOST_BEFORE_MAIN_S else None


def this_process_age_s() -> float:
    """How long ago this process started (0 where /proc cannot say: the command's start is then now)."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            return process_age_s(stat.read(), uptime.read(), os.sysconf("SC_CLK_TCK")) or 0.0
    except (OSError, ValueError, IndexError):
        return 0.0


def start_clock(age_s: float = 0.0, now: float | None = None) -> float:
    """The command's clock starts `age_s` before `now` (time.monotonic()); returns its origin."""
    origin = (time.monotonic() if now is None else now) - age_s
    _began[:] = [origin]
    return origin


def command_began() -> float | None:
    """The command's start (time.monotonic()), or None when no command started the clock."""
    return _began[0] if _began else None


def clock_words(seconds: float) -> str:
    """` 0m17s`, `12m05s`, `1h02m`: the width of the terminal's clock column."""
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60:2d}m{seconds % 60:02d}s"


def clock_prefix() -> str:
    """`[ 0m03s] `: the time since the command's start, for a line the driver prints; empty without a start."""
    began = command_began()
    return "" if began is None else f"[{clock_words(time.monotonic() - began)}] "
