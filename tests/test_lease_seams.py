"""The lease's seams (search.running.writer_lock): a lease whose age the store cannot tell, a lease that cannot be
read, what a driver that lost its lease says. A file:// URI for the lease (read back); no Ray."""

import json
import threading
import time

import pytest

from search.running import writer_lock
from search.running.lease_store import ReadBackStore
from search.running.writer_lock import LEASE_FILE, LeaseLost, WriterLock
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import Experiment

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
