"""The lease's seams (search.running.writer.lock, trainables.foundation.trial_lease, and their one clock,
trainables.foundation.lease_clock): a lease whose age the store cannot tell, a lease that cannot be read, what a
driver that lost its lease says, a removed lease, a takeover during a trial's checkpoint, how a fenced trial ends, and
the writes of a stalled driver's trial process after another driver took the search over. Real files, a file:// URI
for the lease (read back) and a real S3 endpoint (moto's server) where a takeover needs conditional writes; every wait
is on an event or a file; no Ray instance."""

import json
import multiprocessing
import os
import signal
import socket
import time
import traceback

import pytest

from search.running.ends.callbacks import TrialEnds
from search.running.ends.decider import Decider
from search.running.ends.reconcile import reconcile
from search.running.study.queries import trial_id_of
from search.running.writer import lock as writer_lock
from search.running.writer.lease_store import ReadBackStore
from search.running.writer.lock import LEASE_FILE, LeaseLost, WriterLock
from tests.test_endings import Listening, record_in, tune_trial
from trainables.foundation import lease_clock, trial_lease
from trainables.foundation.errors import UsageError
from trainables.foundation.storage import Experiment
from trainables.foundation.trial_files import TrialFiles
from trainables.foundation.trial_lease import TrialFenced, TrialLease

OTHER = {"pid": 4242, "host": "node-2", "command": "python -m search run", "since": 0.0, "token": "x"}


@pytest.fixture
def uri(tmp_path, monkeypatch) -> str:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "bucket" / "exp").mkdir(parents=True)
    return f"file://{tmp_path}/bucket/exp"


def test_a_lease_whose_age_the_store_cannot_tell_is_read_again_after_the_staleness_and_taken_only_unrenewed(
    uri, tmp_path, monkeypatch, capsys
):
    """The store keeps no times: the lease is not taken at once but read again after the staleness. Renewed while
    the newcomer waits (its holder is alive), the newcomer is refused naming it; left as it was, it is taken."""
    monkeypatch.setattr(lease_clock, "STALE_S", 60.0)
    monkeypatch.setattr(ReadBackStore, "now", lambda store: None)
    lease = tmp_path / "bucket" / "exp" / LEASE_FILE
    lease.write_text(json.dumps({**OTHER, "renewed": 1.0}))
    waits = []

    def renewed_meanwhile(seconds: float) -> None:
        waits.append(seconds)
        lease.write_text(json.dumps({**OTHER, "renewed": 2.0}))  # what its live holder does while the newcomer waits

    monkeypatch.setattr(writer_lock, "wait_unrenewed", renewed_meanwhile)
    with pytest.raises(UsageError, match="another driver is writing this search: pid 4242 on node-2"):
        WriterLock(Experiment.at(uri), "python -m search resume").acquire()
    monkeypatch.setattr(writer_lock, "wait_unrenewed", waits.append)  # its holder is gone: nothing renews it
    with WriterLock(Experiment.at(uri), "python -m search resume") as lock:
        assert json.loads(lease.read_text())["token"] == lock.me["token"]
    assert waits == [60.0, 60.0]
    err = capsys.readouterr().err
    assert "has no age the store can tell; reading it again in 60 s" in err and "not renewed in 60 s" in err


def test_the_fence_fails_closed_on_a_lease_it_cannot_read(uri, monkeypatch):
    """A read that fails for a moment is read again and the write goes on; a lease that stays unreadable until this
    driver's last write of it is stale stops the driver (`LeaseLost`), saying so, and every later write with it."""
    monkeypatch.setattr(lease_clock, "STALE_S", 1.0)
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


class FakeClock:
    """The trial lease's clock, run on by its own pauses: a lease unreadable for minutes takes no real time."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_trial_reads_an_unreadable_lease_again_for_as_long_as_its_driver_keeps_it(uri, monkeypatch):
    """The driver's lease names its clock (renewed every 15 s, stale after 60 s): its trial reads a lease it cannot
    read again for 75 s, so a store hiccup of 70 s ends nothing, and stops (`TrialFenced`) only after 75 s."""
    monkeypatch.setattr(lease_clock, "STALE_S", 60.0)
    with WriterLock(Experiment.at(uri), "python -m search run") as lock:
        fence = TrialLease(uri)
        assert fence.token == lock.me["token"] and (fence.holder["renew_s"], fence.holder["stale_s"]) == (15.0, 60.0)
        monkeypatch.setattr(lease_clock, "STALE_S", 1.0)  # the trial's own process knows another clock: not used
        clock, read = FakeClock(), TrialLease._read_once
        monkeypatch.setattr(trial_lease, "time", clock)

        def unreadable_for(seconds: float):
            def read_once(lease):
                if clock.now < seconds:
                    raise OSError("SlowDown: please reduce your request rate")
                return read(lease)

            return read_once

        monkeypatch.setattr(TrialLease, "_read_once", unreadable_for(70.0))
        fence.check()  # read again for 70 s: still its driver's
        assert clock.now >= 70.0
        clock.now = 0.0
        monkeypatch.setattr(TrialLease, "_read_once", unreadable_for(10**6))
        with pytest.raises(TrialFenced, match="it could not be read for 75 s \\(OSError: SlowDown"):
            fence.check()
        assert clock.now == pytest.approx(75.0, abs=0.5)


def test_a_removed_lease_fences_the_trial(uri, tmp_path):
    """The lease the trial started under was removed (its driver ended, or another removed it): the trial stops."""
    lease = tmp_path / "bucket" / "exp" / LEASE_FILE
    lease.write_text(json.dumps({**OTHER, "token": "driver-a"}))
    fence = TrialLease(uri)
    fence.check()  # still its driver's
    lease.unlink()
    with pytest.raises(TrialFenced, match="is no longer its own: it was removed"):
        fence.check()


def test_a_trial_that_starts_after_a_takeover_goes_by_its_own_drivers_lease(uri, tmp_path):
    """Its driver passes the lease it held (`lease_token`): a trial whose process started after another driver took
    the lease over stops at its first check, instead of adopting the newer lease as its own."""
    from trainables.foundation.trial_lease import trial_lease

    lease = tmp_path / "bucket" / "exp" / LEASE_FILE
    lease.write_text(json.dumps({**OTHER, "token": "driver-b"}))  # B took over before the trial's process started
    with pytest.raises(TrialFenced, match="is no longer its own"):
        trial_lease(uri, "driver-a").check()
    trial_lease(uri, "driver-b").check()  # B's own trial goes on


def test_a_takeover_during_a_checkpoints_write_stops_the_trial_before_its_row(uri, tmp_path):
    """The lease is read again after a checkpoint (a write that may take long): taken over meanwhile, the trial
    writes no row from what it knew, and the rows stand as the new driver left them."""
    from trainables.session import EpochWriter

    lease = tmp_path / "bucket" / "exp" / LEASE_FILE
    lease.write_text(json.dumps({**OTHER, "token": "driver-a"}))
    output = {"experiment_dir": uri, "trial_id": "t", "run_name": "train_t", "metric": "val_acc", "mode": "max"}
    writer = EpochWriter({**output, "keep": 2, "hp": {"lr": 0.1}})

    def write_then_taken_over(folder) -> None:
        (folder / "model.pt").write_bytes(b"weights")
        lease.write_text(json.dumps({**OTHER, "pid": 4343, "token": "driver-b"}))  # while it was written
        TrialFiles(uri, "t").append([], {"epoch": 1, "val_acc": 0.2, "by": "B"})

    with pytest.raises(TrialFenced, match="pid 4343 on node-2 holds it now"):
        writer.keep({"epoch": 1, "val_acc": 0.1, "by": "A"}, write_then_taken_over, 1)
    assert [(row["epoch"], row["by"]) for row in TrialFiles(uri, "t").rows()] == [(1, "B")]


def fenced_error_text(tmp_path, trial_id: str) -> str:
    """A trial's error file as Tune writes it for a trial process that raised `TrialFenced`."""
    try:
        raise TrialFenced(f"{trial_id}: the lease of the driver that started this trial ... is no longer its own")
    except TrialFenced as fenced:
        text = "".join(traceback.format_exception(fenced))
    path = tmp_path / f"error-{trial_id}.txt"
    path.write_text(f"Failure # 1 (occurred at 2026-01-01_00-00-00)\nray::_Inner.train()\n{text}")
    return str(path)


def test_a_fenced_trial_ends_interrupted_for_resume_never_failed(tmp_path):
    """A trial that stopped on its lease has not ended: the study keeps it running, no `end.json` is written, no
    follower hears of an end, and `resume` runs it on; a trial that raised anything else fails."""
    record, listening = record_in(tmp_path), Listening()
    ends = TrialEnds(Decider(record, str(tmp_path), [listening]), 3)
    for trial_id in ("fenced", "broken", "retried"):
        record.create(trial_id)
        record.report(trial_id, 1, 0.6)
    fenced = tune_trial("fenced", 1)
    fenced.error_file = fenced_error_text(tmp_path, "fenced")
    ends.on_trial_error(0, [], fenced)
    broken = tune_trial("broken", 1)
    broken.error_file = str(tmp_path / "error-broken.txt")
    (tmp_path / "error-broken.txt").write_text("Traceback (most recent call last):\nRuntimeError: boom\n")
    ends.on_trial_error(0, [], broken)
    retried = tune_trial("retried", 1)  # fenced at its first try, Tune tried again (max_failures), and that one broke
    retried.error_file = fenced_error_text(tmp_path, "retried")
    with open(retried.error_file, "a") as error_file:  # Tune appends each try's error under its own header
        error_file.write("Failure # 2 (occurred at 2026-01-01_00-01-00)\nTraceback (most recent call last):\n")
        error_file.write("RuntimeError: boom\n")
    ends.on_trial_error(0, [], retried)
    assert record.ending("fenced") is None and TrialFiles(str(tmp_path), "fenced").ending() is None
    # a failed trial's error is in its folder when the live view names it (Tune's copy comes with its snapshot)
    assert (tmp_path / "trial_broken" / "error.txt").read_text().endswith("RuntimeError: boom\n")
    assert not (tmp_path / "trial_fenced" / "error.txt").exists()
    assert record.ending("broken").status == "failed" and record.ending("retried").status == "failed"
    assert [trial_id for trial_id, _ in listening.heard] == ["broken", "retried"]
    assert [trial_id_of(frozen) for frozen in reconcile(Decider(record, str(tmp_path)))] == ["fenced"]


def hold_the_lease(uri: str, ready, renew: str, renewal) -> None:
    """Driver A: holds the experiment's lease, renewing it; once told to (a file), renews it once more at once and
    says whether the store took that renewal and what A then says of its lease."""
    lock = WriterLock(Experiment.at(uri), "python -m search run space=mlp_mnist").acquire()
    ready.set()
    while not os.path.exists(renew):
        time.sleep(0.05)
    renewed = lock._renew_once()
    renewal.put((renewed, str(lock.lost)))
    time.sleep(600)


def write_a_trials_epochs(uri: str, wrote, go: str, outcome) -> None:
    """Driver A's trial process: rows 1 and 2 (no checkpoints), then, once thawed and told to go (a file: the test
    never waits on a lock a stopped process may hold), its row 3 and its checkpoint from what it knew."""
    from trainables.session import EpochWriter

    output = {"experiment_dir": uri, "trial_id": "t", "run_name": "train_t", "metric": "val_acc", "mode": "max"}
    writer = EpochWriter({**output, "keep": 2, "hp": {"lr": 0.1}})
    for epoch in (1, 2):
        writer.keep({"epoch": epoch, "val_acc": epoch / 10, "by": "A"}, None, epoch)
    wrote.set()
    while not os.path.exists(go):
        time.sleep(0.05)
    try:
        writer.keep({"epoch": 3, "val_acc": 0.3, "by": "A"}, lambda folder: (folder / "model.pt").write_bytes(b"A"), 3)
        outcome.put("wrote epoch 3")
    except TrialFenced as fenced:
        outcome.put(str(fenced))


def test_after_a_takeover_the_stalled_drivers_trial_writes_nothing_and_no_row_is_lost(s3_bucket, tmp_path, monkeypatch):
    """On a store with conditional writes (S3): driver A and its trial process write rows 1 and 2 of trial t; the
    machine stalls (SIGSTOP); its lease is stale by the store's clock and driver B takes it and runs t on: rows 3 and
    4. A is thawed: its renewal is refused by the store, and its trial process, going to write its checkpoint and
    row 3 (from the rows it knew, 1 and 2), stops, naming what it saw; every row B wrote stands. (Where writes are
    not conditional, a holder thawed between its read-back and its renewal overwrites the newcomer's lease:
    docs/one-writer.md.)"""
    uri = f"{s3_bucket}/exp"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-home"))
    context = multiprocessing.get_context("spawn")
    ready, wrote, outcome = context.Event(), context.Event(), context.Queue()
    go, renew, renewal = tmp_path / "go", tmp_path / "renew", context.Queue()
    driver = context.Process(target=hold_the_lease, args=(uri, ready, str(renew), renewal))
    trial = context.Process(target=write_a_trials_epochs, args=(uri, wrote, str(go), outcome))
    driver.start()
    try:
        assert ready.wait(300)
        trial.start()
        assert wrote.wait(300)
        for process in (driver, trial):
            os.kill(process.pid, signal.SIGSTOP)  # the machine of A stalls
        monkeypatch.setattr(writer_lock, "age_by_store", lambda lease, now: lease_clock.STALE_S)  # long enough
        with WriterLock(Experiment(uri, tmp_path / "b-home"), "python -m search resume") as b:  # B takes it over
            files = TrialFiles(uri, "t")
            rows = files.rows()
            for epoch in (3, 4):
                rows = files.append(rows, {"epoch": epoch, "val_acc": epoch / 10, "by": "B"})
            for process in (trial, driver):
                os.kill(process.pid, signal.SIGCONT)
            renew.write_text("renew")  # A renews: the store refuses it (its version is B's), A says who holds it
            renewed, lost = renewal.get(timeout=300)
            assert not renewed and f"another driver took this search over: pid {os.getpid()} on " in lost, lost
            assert TrialLease(uri).token == b.me["token"]
            go.write_text("go")
            said = outcome.get(timeout=300)
            assert TrialLease(uri).token == b.me["token"]
        assert [(row["epoch"], row["by"]) for row in TrialFiles(uri, "t").rows()] == [
            (1, "A"),
            (2, "A"),
            (3, "B"),
            (4, "B"),
        ]
        assert "the lease of the driver that started this trial" in said and "is no longer its own" in said, said
        assert f"pid {os.getpid()} on {socket.gethostname()} holds it now" in said, said
        assert not any(key.endswith("model.pt") for key in keys(s3_bucket))  # nor its checkpoint
    finally:
        for process in (driver, trial):
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, signal.SIGCONT)
                process.kill()
                process.join(10)


def keys(s3_bucket: str) -> list[str]:
    from search.running.writer.lease_store import s3_client

    listed = s3_client(s3_bucket).list_objects_v2(Bucket="bucket")
    return [item["Key"] for item in listed.get("Contents", [])]


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
