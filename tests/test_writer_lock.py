"""One writer per experiment (search.running.writer_lock): real processes, real files, a file:// URI for the lease."""

import json
import multiprocessing
import os
import signal
import socket
import time

import pytest

from search.running.writer_lock import LEASE_FILE, LOCK_FILE, LeaseLost, WriterLock
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import Experiment
from trainables.foundation.trial_files import TrialFiles


def hold_until_killed(folder: str, ready) -> None:
    WriterLock(Experiment.at(folder), "python -m search run space=mlp_mnist").acquire()
    ready.set()
    time.sleep(600)


def test_a_second_writer_is_refused_naming_the_holder_and_a_dead_holders_lock_is_taken_over(tmp_path, capsys):
    ready = multiprocessing.get_context("spawn").Event()
    holder = multiprocessing.get_context("spawn").Process(target=hold_until_killed, args=(str(tmp_path), ready))
    holder.start()
    try:
        assert ready.wait(60)
        with pytest.raises(UsageError) as refused:
            WriterLock(Experiment.at(str(tmp_path)), "python -m search resume x").acquire()
        words = str(refused.value)
        assert f"another driver is writing this search: pid {holder.pid} on {socket.gethostname()}" in words
        assert "`python -m search run space=mlp_mnist`" in words
        os.kill(holder.pid, signal.SIGKILL)  # a kill leaves the file naming it; the kernel frees the lock
        holder.join(30)
        with WriterLock(Experiment.at(str(tmp_path)), "python -m search resume x"):
            held = json.loads((tmp_path / LOCK_FILE).read_text())
            assert held["pid"] == os.getpid() and held["command"] == "python -m search resume x"
        assert f"lock of pid {holder.pid} on" in capsys.readouterr().err  # the takeover is said
        assert (tmp_path / LOCK_FILE).read_text() == ""  # released: it names no holder
    finally:
        if holder.is_alive():
            holder.kill()


def test_on_a_uri_a_live_lease_refuses_and_a_stale_one_is_taken(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    uri = f"file://{tmp_path}/bucket/exp"
    (tmp_path / "bucket" / "exp").mkdir(parents=True)
    lease = tmp_path / "bucket" / "exp" / LEASE_FILE
    other = {"pid": 4242, "host": "node-2", "command": "python -m search run", "since": time.time(), "token": "x"}
    lease.write_text(json.dumps({**other, "renewed": time.time()}))
    with pytest.raises(UsageError, match="pid 4242 on node-2"):
        WriterLock(Experiment.at(uri), "python -m search resume").acquire()
    assert not (Experiment.at(uri).local / LOCK_FILE).read_text()  # the local lock was given back
    # its holder's clock runs 10 minutes behind: the store's clock says the lease is live, and it stands
    lease.write_text(json.dumps({**other, "renewed": time.time() - 600}))
    with pytest.raises(UsageError, match="pid 4242 on node-2"):
        WriterLock(Experiment.at(uri), "python -m search resume").acquire()
    written = time.time() - 600  # the store last wrote it 10 minutes ago: its holder stopped renewing it
    os.utime(lease, (written, written))
    with WriterLock(Experiment.at(uri), "python -m search resume") as lock:
        assert json.loads(lease.read_text())["token"] == lock.me["token"]
    assert "lease of pid 4242 on node-2" in capsys.readouterr().err and not lease.exists()


def test_a_holder_whose_lease_was_taken_stops_before_its_next_write(tmp_path, monkeypatch, capsys):
    """It stalled (a suspended machine); another driver took the lease. At its next write, or its next renewal,
    it reads the lease back, stops with the new holder's name, writes nothing, and leaves the new lease alone."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    uri = f"file://{tmp_path}/bucket/exp"
    lease = tmp_path / "bucket" / "exp" / LEASE_FILE
    lock = WriterLock(Experiment.at(uri), "python -m search run").acquire()
    try:
        experiment = Experiment.at(uri)
        (experiment.local / "study.log").write_text("mine\n")
        experiment.upload(["study.log"])  # while it holds the lease
        newcomer = {"pid": 4343, "host": "node-3", "command": "python -m search resume", "since": time.time()}
        lease.write_text(json.dumps({**newcomer, "token": "theirs", "renewed": time.time()}))
        (experiment.local / "study.log").write_text("stale\n")
        with pytest.raises(LeaseLost, match="pid 4343 on node-3") as lost:
            experiment.upload(["study.log"])
        assert lost.value.exit_code == 1
        with pytest.raises(LeaseLost):
            TrialFiles(uri, "a").write_ending("completed")  # end.json too: no write at all
        assert (tmp_path / "bucket" / "exp" / "study.log").read_text() == "mine\n"
        assert not (tmp_path / "bucket" / "exp" / "trial_a").exists()
        lock._renew_once()  # its renewal thread wakes: it reads the lease back and writes nothing
        assert json.loads(lease.read_text())["token"] == "theirs"
    finally:
        lock.release()
    assert json.loads(lease.read_text())["token"] == "theirs"  # not deleted on release
    assert "another driver took this search over: pid 4343 on node-3" in capsys.readouterr().err


def test_a_reader_downloads_a_uri_experiment_into_a_folder_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    uri = f"file://{tmp_path}/bucket/exp"
    assert Experiment.at(uri, reading=True).local != Experiment.at(uri).local


def claim_under_the_lease(location: str, cache: str, barrier, outcomes) -> None:
    """What `run` does on a URI: take the lease, then claim the experiment under it."""
    os.environ["XDG_CACHE_HOME"] = cache
    from trainables.foundation.storage import claim

    barrier.wait(timeout=30)
    try:
        with WriterLock(Experiment.at(location), "python -m search run"):
            claim(Experiment.at(location), "same")
            outcomes.put("claimed")
            time.sleep(1)  # the winner runs on while the other reads the lease back
    except UsageError as refusal:
        outcomes.put(str(refusal))


def test_of_two_runs_of_one_uri_experiment_at_once_exactly_one_claims_it(tmp_path):
    """Two machines (two caches) start `run` with the same URI and name at the same moment: the lease decides."""
    context = multiprocessing.get_context("spawn")
    outcomes, barrier = context.Queue(), context.Barrier(2)
    location = f"file://{tmp_path}/bucket/same"
    both = [
        context.Process(target=claim_under_the_lease, args=(location, str(tmp_path / f"cache{n}"), barrier, outcomes))
        for n in range(2)
    ]
    for process in both:
        process.start()
    for process in both:
        process.join(timeout=60)
    results = sorted(outcomes.get(timeout=5) for _ in both)
    assert results[0] == "claimed" and "another driver is writing this search" in results[1], results
