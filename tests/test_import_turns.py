"""A trial process imports torch and the loop in one of its node's import turns, one a core
(trainables/foundation/import_turns.py): more processes than turns wait for the first turn given back, a dead holder
frees its turn, a process takes a turn once, and a folder that is not this user's own, or a wait past its patience,
never stops a start. Lock files in a temporary folder; no Ray, no torch."""

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import REPO
from trainables.foundation import import_turns
from trainables.foundation.import_turns import import_in_turn, one_turn, take_turn


def taken(folder: Path, index: int) -> bool:
    """Whether turn `index` is held by anyone, this process's other open files included."""
    with open(folder / f"{index}.lock", "a") as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


@pytest.fixture
def fresh_process(monkeypatch):
    monkeypatch.setattr(import_turns, "_tried", False)  # as in a trial process that has taken no turn yet


def test_each_holder_takes_a_free_turn_and_gives_it_back(tmp_path):
    folder = tmp_path / "turns"
    with one_turn(2, folder) as first, one_turn(2, folder) as second:
        assert first and second
        assert taken(folder, 0) and taken(folder, 1)
    assert not taken(folder, 0) and not taken(folder, 1)
    assert os.stat(folder).st_mode & 0o777 == 0o700  # this user's alone


@pytest.mark.parametrize("turns", [1, 3])
def test_every_turn_taken_a_waiter_takes_the_first_one_given_back(tmp_path, turns):
    held = [take_turn(turns, tmp_path) for _ in range(turns)]
    waiting, got = threading.Event(), []
    waiter = threading.Thread(target=lambda: got.append(take_turn(turns, tmp_path, 30, waiting.set)), daemon=True)
    try:
        waiter.start()
        assert waiting.wait(30) and not got  # it found every turn taken
        os.close(held[-1])  # the last turn given back
        held.pop()
        waiter.join(30)
        assert got and got[0] is not None
        assert taken(tmp_path, turns - 1)  # the waiter holds the turn given back
    finally:
        for lock in [*held, *[h for h in got if h is not None]]:
            os.close(lock)


def test_a_waiter_past_its_patience_takes_no_turn_and_the_block_still_runs(tmp_path):
    held, ran = take_turn(1, tmp_path), []

    def wait() -> None:
        with one_turn(1, tmp_path, patience_s=0.2) as turn:
            ran.append(turn)

    waiter = threading.Thread(target=wait, daemon=True)
    try:
        waiter.start()
        waiter.join(30)  # a patience not kept fails here, not in a hang
        assert not waiter.is_alive() and ran == [False]
    finally:
        os.close(held)


def test_a_killed_holder_never_keeps_its_turn(tmp_path):
    code = (
        "import sys; from pathlib import Path; from trainables.foundation.import_turns import one_turn\n"
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


def test_a_folder_not_this_users_own_holds_no_turn_and_its_links_are_never_followed(tmp_path):
    if os.getuid() == 0:  # as root (CI), a folder another user made, as one in a shared /tmp would be
        others = tmp_path / "others"
        others.mkdir(mode=0o700)
        os.chown(others, 65534, 65534)
        with one_turn(2, others) as turn:
            assert turn is False
        assert list(others.iterdir()) == []
    open_to_others = tmp_path / "open"
    open_to_others.mkdir(mode=0o777)
    open_to_others.chmod(0o777)
    with one_turn(2, open_to_others) as turn:
        assert turn is False
    assert list(open_to_others.iterdir()) == []
    linked = tmp_path / "linked"
    linked.mkdir(mode=0o700)
    (linked / "0.lock").symlink_to(tmp_path / "elsewhere.lock")  # a link where a turn's lock file would be
    with one_turn(2, linked) as turn:
        assert turn is False
    assert not (tmp_path / "elsewhere.lock").exists()  # never followed
    (tmp_path / "folder-link").symlink_to(tmp_path / "open", target_is_directory=True)
    with one_turn(2, tmp_path / "folder-link") as turn:  # the folder itself a link
        assert turn is False
    (tmp_path / "a-file").write_text("a file where the folder would be")
    with one_turn(2, tmp_path / "a-file") as turn:
        assert turn is False


def test_a_process_imports_what_it_lacks_in_one_turn_once_and_a_warm_one_takes_none(
    tmp_path, fresh_process, monkeypatch
):
    monkeypatch.setattr(import_turns, "local_cpu_count", lambda: 1)  # one turn: a second look would wait for it
    assert import_in_turn(("os", "json"), tmp_path / "turns") == (0.0, False)
    assert not (tmp_path / "turns").exists()  # nothing lacking: no turn taken, nothing written
    (tmp_path / "fresh_module_for_turns.py").write_text("VALUE = 4\n")
    sys.path.insert(0, str(tmp_path))
    try:
        waited, held = import_in_turn(("fresh_module_for_turns", "no_such_module_anywhere"), tmp_path / "turns")
        assert held and waited > 0
        assert sys.modules["fresh_module_for_turns"].VALUE == 4  # a module that is missing is left to its user
        assert [p.name for p in (tmp_path / "turns").iterdir()] == ["0.lock"]  # the first turn, free, taken
        with one_turn(1, tmp_path / "turns"):  # every turn taken: a second look would wait, but none is made
            assert import_in_turn(("no_such_module_anywhere",), tmp_path / "turns") == (0.0, False)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("fresh_module_for_turns", None)


def test_where_no_turn_can_be_taken_the_modules_still_import(tmp_path, fresh_process):
    (tmp_path / "turns").write_text("a file where the folder would be")
    (tmp_path / "lonely_module_for_turns.py").write_text("VALUE = 3\n")
    sys.path.insert(0, str(tmp_path))
    try:
        assert import_in_turn(("lonely_module_for_turns",), tmp_path / "turns")[1] is False
        assert sys.modules["lonely_module_for_turns"].VALUE == 3
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("lonely_module_for_turns", None)


@pytest.mark.parametrize(("quota", "turns"), [("150000 100000", 1), ("max 100000", None), ("no quota here", None)])
def test_a_containers_cpu_quota_caps_the_turns_where_it_is_fewer_than_the_cores(tmp_path, monkeypatch, quota, turns):
    (tmp_path / "cpu.max").write_text(quota + "\n")
    monkeypatch.setattr(import_turns, "CGROUP_CPU_MAX", tmp_path / "cpu.max")
    monkeypatch.setattr(import_turns, "local_cpu_count", lambda: 4)
    assert import_turns.turns_here() == (turns or 4)
