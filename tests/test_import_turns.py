"""A trial process imports torch and the loop in one of its node's import turns, one a core
(trainables/foundation/warm.py): more processes than turns wait, a dead holder frees its turn, a warm process takes
none, and a folder that cannot hold turns never stops a start. Lock files in a temporary folder; no Ray, no torch."""

import fcntl
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from trainables.foundation.warm import import_in_turn, one_turn, take_turn


def taken(folder: Path, index: int) -> bool:
    """Whether turn `index` is held by anyone, this process's other open files included."""
    with open(folder / f"{index}.lock", "a") as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


def waiters(pid: int) -> int:
    """How many of `pid`'s lock requests wait (the lines of /proc/locks marked '->')."""
    return sum(" -> " in line and f" {pid} " in line for line in Path("/proc/locks").read_text().splitlines())


def until_waiting(count: int, pid: int = os.getpid()) -> None:
    """Return once `count` lock requests of `pid` wait, as the kernel lists them (30 s at most: then fail)."""
    deadline = time.monotonic() + 30
    while waiters(pid) != count:
        assert time.monotonic() < deadline, Path("/proc/locks").read_text()


def test_each_holder_takes_a_free_turn_and_gives_it_back(tmp_path):
    with one_turn(2, tmp_path) as first, one_turn(2, tmp_path) as second:
        assert first is not None and second is not None  # seconds waited: none needed
        assert taken(tmp_path, 0) and taken(tmp_path, 1)
    assert not taken(tmp_path, 0) and not taken(tmp_path, 1)


def test_a_holder_beyond_the_turns_waits_until_one_is_given_back(tmp_path):
    got, handles = threading.Event(), []
    with one_turn(1, tmp_path):
        threading.Thread(target=lambda: (handles.append(take_turn(1, tmp_path)), got.set()), daemon=True).start()
        until_waiting(1)  # the kernel lists the thread's request as waiting for the lock
        assert not got.is_set()
    assert got.wait(30)  # given back: the waiting holder has it
    handles[0].close()


def test_a_killed_holder_never_keeps_its_turn(tmp_path):
    code = (
        "import sys; from pathlib import Path; from trainables.foundation.warm import one_turn\n"
        f"with one_turn(1, Path({str(tmp_path)!r})):\n    print('held', flush=True); sys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        assert taken(tmp_path, 0)
        holder.kill()
        holder.wait(30)
    finally:
        holder.kill()
    assert not taken(tmp_path, 0)


def test_a_folder_that_cannot_hold_turns_takes_none_and_the_modules_still_import(tmp_path):
    (tmp_path / "turns").write_text("a file where the folder would be")
    module = tmp_path / "lonely_module_for_turns.py"
    module.write_text("VALUE = 3\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with one_turn(2, tmp_path / "turns") as waited:
            assert waited is None
        assert import_in_turn(("lonely_module_for_turns",), tmp_path / "turns") == 0.0
        assert sys.modules["lonely_module_for_turns"].VALUE == 3
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("lonely_module_for_turns", None)


def test_a_process_that_has_its_modules_takes_no_turn_and_one_that_lacks_them_imports_them_in_one(tmp_path):
    assert import_in_turn(("os", "json"), tmp_path / "turns") == 0.0
    assert not (tmp_path / "turns").exists()  # no turn taken, nothing written
    (tmp_path / "fresh_module_for_turns.py").write_text("VALUE = 4\n")
    sys.path.insert(0, str(tmp_path))
    try:
        assert import_in_turn(("fresh_module_for_turns", "no_such_module_anywhere"), tmp_path / "turns") >= 0.0
        assert sys.modules["fresh_module_for_turns"].VALUE == 4  # a module that is missing is left to its user
        assert [p.name for p in (tmp_path / "turns").iterdir()] == ["0.lock"]  # the first turn, free, taken
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("fresh_module_for_turns", None)


@pytest.mark.parametrize("turns", [1, 3])
def test_every_turn_taken_the_waiters_are_dealt_round_the_turns_in_order_of_arrival(tmp_path, turns):
    held = [take_turn(turns, tmp_path) for _ in range(turns)]
    got, events = {}, {arrival: threading.Event() for arrival in range(turns + 1)}
    turn_0 = threading.Event()  # taken by arrival 0 or arrival `turns`, the two tickets of turn 0

    def wait(arrival: int) -> None:
        got[arrival] = take_turn(turns, tmp_path)  # kept until the end
        events[arrival].set()
        if arrival in (0, turns):
            turn_0.set()

    try:
        assert all(taken(tmp_path, index) for index in range(turns))
        for arrival in range(turns + 1):  # tickets 0..turns: turns 0, 1, .., then 0 again
            threading.Thread(target=wait, args=(arrival,), daemon=True).start()
            until_waiting(arrival + 1)  # this arrival waits before the next one comes
        for index in range(1, turns):
            held[index].close()  # turn `index` given back: the arrival with ticket `index` has it
            assert events[index].wait(30)
        assert not turn_0.is_set()  # arrivals 0 and `turns` hold tickets of turn 0, still taken
        held[0].close()
        assert turn_0.wait(30)
        assert len([a for a in (0, turns) if a in got]) == 1  # one of them has it, the other waits on
        until_waiting(1)
    finally:
        for handle in [*held, *got.values()]:
            handle.close()
