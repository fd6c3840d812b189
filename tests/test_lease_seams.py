"""The lease's seams (search.running.writer.lock, trainables.foundation.trial_lease): a lease whose age the store
cannot tell, a lease that cannot be read, what a driver that lost its lease says, and the writes of a stalled
driver's trial process after another driver took the search over. Real processes and a file:// URI for the lease
(read back); no Ray instance."""

import json
import multiprocessing
import os
import signal
import socket
import threading
import time

import pytest

from search.running.writer import lock as writer_lock
from search.running.writer.lease_store import ReadBackStore
from search.running.writer.lock import LEASE_FILE, LeaseLost, WriterLock
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import Experiment
from trainables.foundation.trial_files import TrialFiles

OTHER = {"pid": 4242, "host": "node-2", "command": "python -m search run", "since": 0.0, "token": "x"}


@pytest.fixture
def uri(tmp_path, monkeypatch) -> str:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "bucket" / "exp").mkdir(parents=True)
    return f"file://{tmp_path}/bucket/exp"


def test_a_lease_whose_age_the_store_cannot_tell_is_read_again_after_the_staleness_and_taken_only_unrenewed(
    uri, tmp_path, monkeypatch, capsys
):
    """The store keeps no times: the lease is not taken at once. Renewed while the newcomer waits (its holder is
    alive), the newcomer is refused naming it; left as it was for the staleness interval, it is taken."""
    monkeypatch.setattr(writer_lock, "STALE_S", 1.0)
    monkeypatch.setattr(ReadBackStore, "now", lambda store: None)
    lease = tmp_path / "bucket" / "exp" / LEASE_FILE
    lease.write_text(json.dumps({**OTHER, "renewed": 1.0}))
    renewal = threading.Timer(0.5, lambda: lease.write_text(json.dumps({**OTHER, "renewed": 2.0})))
    renewal.start()
    started = time.monotonic()
    with pytest.raises(UsageError, match="another driver is writing this search: pid 4242 on node-2"):
        WriterLock(Experiment.at(uri), "python -m search resume").acquire()
    renewal.join()
    assert time.monotonic() - started >= 1.0
    started = time.monotonic()
    with WriterLock(Experiment.at(uri), "python -m search resume") as lock:
        assert time.monotonic() - started >= 1.0
        assert json.loads(lease.read_text())["token"] == lock.me["token"]
    err = capsys.readouterr().err
    assert "has no age the store can tell; reading it again in 1 s" in err and "not renewed in 1 s" in err


def test_the_fence_fails_closed_on_a_lease_it_cannot_read(uri, monkeypatch):
    """A read that fails for a moment is read again and the write goes on; a lease that stays unreadable until this
    driver's last write of it is stale stops the driver (`LeaseLost`), saying so, and every later write with it."""
    monkeypatch.setattr(writer_lock, "STALE_S", 1.0)
    lock = WriterLock(Experiment.at(uri), "python -m search run").acquire()
    try:
        read, failures = ReadBackStore.read, []

        def unreadable(store, times: int):
            if len(failures) < times:
                failures.append(1)
                raise OSError("connection reset by peer")
            return read(store)

        monkeypatch.setattr(ReadBackStore, "read", lambda store: unreadable(store, 1))
        lock.check()  # read again: still its own
        assert failures == [1] and lock.lost is None
        monkeypatch.setattr(ReadBackStore, "read", lambda store: unreadable(store, 10**6))
        lock.written_at = time.monotonic() - 1.0  # its renewals stalled: its last write is a staleness old
        with pytest.raises(LeaseLost, match="its lease could not be read \\(OSError: connection reset by peer\\)"):
            lock.check()
        monkeypatch.setattr(ReadBackStore, "read", read)
        with pytest.raises(LeaseLost):
            lock.check()  # lost stays lost
    finally:
        lock.release()


def test_a_driver_that_lost_its_lease_names_what_it_saw(uri, tmp_path, monkeypatch):
    """Taken by another (named, with how long ago this driver last wrote its lease: 42 s, not a fixed 60), or
    removed."""
    lease = tmp_path / "bucket" / "exp" / LEASE_FILE
    for seen in ("taken", "removed"):
        lease.unlink(missing_ok=True)  # the other's lease of the first case, left as a lost lease leaves it
        lock = WriterLock(Experiment.at(uri), "python -m search run").acquire()
        try:
            lock.written_at = time.monotonic() - 42  # a stall of 42 s since its last renewal
            if seen == "taken":
                lease.write_text(json.dumps({**OTHER, "token": "theirs", "renewed": time.time()}))
            else:
                lease.unlink()
            with pytest.raises(LeaseLost) as lost:
                lock.check()
        finally:
            lock.release()
        words = str(lost.value)
        assert "this driver last wrote its lease 42 s ago" in words and "60 s" not in words, words
        if seen == "taken":
            assert "another driver took this search over: pid 4242 on node-2" in words, words
        else:
            assert "its lease was removed" in words, words


def hold_the_lease(uri: str, ready) -> None:
    """Driver A: holds the experiment's lease, renewing it, until it is stopped."""
    WriterLock(Experiment.at(uri), "python -m search run space=mlp_mnist").acquire()
    ready.set()
    time.sleep(600)


def write_a_trials_epochs(uri: str, wrote, go: str, outcome) -> None:
    """Driver A's trial process: rows 1 and 2 (no checkpoints), then, once thawed and told to go (a file: the test
    never waits on a lock a stopped process may hold), its row 3 from what it knew."""
    from trainables.foundation.trial_lease import TrialFenced
    from trainables.session import EpochWriter

    output = {"experiment_dir": uri, "trial_id": "t", "run_name": "train_t", "metric": "val_acc", "mode": "max"}
    writer = EpochWriter({**output, "keep": 2, "hp": {"lr": 0.1}})
    for epoch in (1, 2):
        writer.keep({"epoch": epoch, "val_acc": epoch / 10, "by": "A"}, None, epoch)
    wrote.set()
    deadline = time.monotonic() + 120
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        writer.keep({"epoch": 3, "val_acc": 0.3, "by": "A"}, None, 3)
        outcome.put("wrote epoch 3")
    except TrialFenced as fenced:
        outcome.put(str(fenced))


def test_after_a_takeover_the_stalled_drivers_trial_writes_nothing_and_no_row_is_lost(uri, tmp_path, monkeypatch):
    """Driver A and its trial process write rows 1 and 2 of trial t; the machine stalls (SIGSTOP) past the lease's
    staleness; driver B takes the lease and runs t on: rows 3 and 4. A's trial process is thawed and goes to write
    its row 3 (from the rows it knew, 1 and 2): it stops, naming what it saw, and every row B wrote stands."""
    monkeypatch.setenv("SEARCH_LEASE_STALE_S", "1")  # A's process reads it when it starts: renewals every 0.25 s
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-home"))
    monkeypatch.setattr(writer_lock, "STALE_S", 1.0)
    context = multiprocessing.get_context("spawn")
    ready, wrote, outcome = context.Event(), context.Event(), context.Queue()
    go = tmp_path / "go"
    driver = context.Process(target=hold_the_lease, args=(uri, ready))
    trial = context.Process(target=write_a_trials_epochs, args=(uri, wrote, str(go), outcome))
    driver.start()
    try:
        assert ready.wait(60)
        trial.start()
        assert wrote.wait(120)
        for process in (driver, trial):
            os.kill(process.pid, signal.SIGSTOP)  # the machine of A stalls
        time.sleep(1.5)  # past the lease's staleness, by the store's clock
        with WriterLock(Experiment(uri, tmp_path / "b-home"), "python -m search resume"):  # B takes the search over
            files = TrialFiles(uri, "t")
            rows = files.rows()
            for epoch in (3, 4):
                rows = files.append(rows, {"epoch": epoch, "val_acc": epoch / 10, "by": "B"})
            for process in (trial, driver):
                os.kill(process.pid, signal.SIGCONT)
            go.write_text("go")
            said = outcome.get(timeout=60)
        assert [(row["epoch"], row["by"]) for row in TrialFiles(uri, "t").rows()] == [
            (1, "A"),
            (2, "A"),
            (3, "B"),
            (4, "B"),
        ]
        assert "the lease of the driver that started this trial" in said and "is no longer its own" in said, said
        assert f"pid {os.getpid()} on {socket.gethostname()} holds it now" in said, said
    finally:
        for process in (driver, trial):
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, signal.SIGCONT)
                process.kill()
                process.join(10)


def test_a_writer_that_knew_fewer_rows_keeps_the_rows_another_writer_added(tmp_path):
    """A local experiment has no lease: a trial process its dead driver left behind writes its next row from the rows
    it knew; the rows a newer writer added since are kept, and an epoch recorded there is not written again."""
    stale, newer = TrialFiles(str(tmp_path), "t"), TrialFiles(str(tmp_path), "t")
    known = []
    for epoch in (1, 2):
        known = stale.append(known, {"epoch": epoch, "by": "A"})
    rows = newer.rows()
    for epoch in (3, 4):
        rows = newer.append(rows, {"epoch": epoch, "by": "B"})
    stale.append(known, {"epoch": 3, "by": "A"})
    stale.append(known, {"epoch": 5, "by": "A"})
    text = (tmp_path / "trial_t" / "result.json").read_text()
    assert [(row["epoch"], row["by"]) for row in map(json.loads, text.splitlines())] == [
        (1, "A"),
        (2, "A"),
        (3, "B"),
        (4, "B"),
        (5, "A"),
    ]
