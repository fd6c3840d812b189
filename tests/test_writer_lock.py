"""One writer per experiment (search.running.writer.lock): real processes, real files, a file:// URI for the lease
(read back) and a real S3 endpoint (moto's server) for the lease written conditionally."""

import json
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time

import pytest

from search.running.writer import lock as writer_lock
from search.running.writer.lease_store import ConditionalStore, ReadBackStore, age_by_store, lease_store, s3_client
from search.running.writer.lock import LEASE_FILE, LOCK_FILE, LeaseLost, WriterLock
from trainables.foundation import lease_clock
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
    """A reader (report, dashboard, export) of a URI experiment reads a copy in a folder of its own: the driver's
    working folder, where the driver writes, is never touched."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    uri = f"file://{tmp_path}/bucket/exp"
    (tmp_path / "bucket" / "exp" / "trial_a").mkdir(parents=True)
    (tmp_path / "bucket" / "exp" / "study.log").write_text("the driver's\n")
    (tmp_path / "bucket" / "exp" / "trial_a" / "result.json").write_text("{}\n")
    driver = Experiment.at(uri)
    driver.local.mkdir(parents=True)
    (driver.local / "study.log").write_text("being written\n")
    reader = Experiment.at(uri, reading=True)
    reader.download()
    assert (reader.local / "study.log").read_text() == "the driver's\n"
    assert (reader.local / "trial_a" / "result.json").is_file()
    assert (driver.local / "study.log").read_text() == "being written\n"  # the driver's folder as it was
    assert sorted(p.name for p in driver.local.iterdir()) == ["study.log"]


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


def test_on_s3_the_lease_is_written_conditionally_through_boto3_and_read_back_without_it(monkeypatch):
    lease = "s3://KEY:SECRET@bucket/runs/exp/driver.lease?endpoint_override=127.0.0.1:9000&scheme=http&region=eu-west-1"
    store = lease_store(lease)
    assert isinstance(store, ConditionalStore) and (store.bucket, store.key) == ("bucket", "runs/exp/driver.lease")
    client = s3_client(lease)  # the endpoint, region and credentials pyarrow reads from the same URI
    assert client.meta.endpoint_url == "http://127.0.0.1:9000" and client.meta.region_name == "eu-west-1"
    assert client._request_signer._credentials.access_key == "KEY"
    assert isinstance(lease_store("file:///tmp/exp/driver.lease"), ReadBackStore)
    monkeypatch.setitem(sys.modules, "boto3", None)  # boto3 is not a dependency of the package
    assert isinstance(lease_store(lease), ReadBackStore)


def take_at_once(location: str, folders: list, monkeypatch) -> tuple[list, list]:
    """Two drivers (two working folders, as on two machines) take the lease of one S3 experiment at the same
    moment: each reads the lease before either writes it, so only the store's condition can tell them apart."""
    both_read, first_read = threading.Barrier(2), threading.local()
    read = ConditionalStore.read

    def read_then_wait(store):
        lease = read(store)
        if not getattr(first_read, "done", False):
            first_read.done = True
            both_read.wait(timeout=30)
        return lease

    monkeypatch.setattr(ConditionalStore, "read", read_then_wait)
    locks = [WriterLock(Experiment(location, folder), "python -m search run") for folder in folders]
    won, refused = [], []

    def take(lock: WriterLock) -> None:
        try:
            won.append(lock.acquire())
        except UsageError as refusal:
            refused.append(str(refusal))

    racers = [threading.Thread(target=take, args=(lock,)) for lock in locks]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=60)
    monkeypatch.setattr(ConditionalStore, "read", read)
    return won, refused


def test_on_s3_of_two_drivers_taking_one_lease_at_once_exactly_one_wins_by_the_conditional_write(
    tmp_path, s3_bucket, monkeypatch
):
    """No lease yet (If-None-Match: *), then a stale one (If-Match: its ETag): both drivers judge the lease theirs to
    take; the store accepts one write and refuses the other, which is refused naming the winner, with no read-back
    pause. Then a third driver finds the winner's lease live and is refused."""
    s3 = s3_client(s3_bucket)
    for case in ("fresh", "stale"):
        location = f"{s3_bucket}/{case}"
        if case == "stale":
            other = {"pid": 4242, "host": "node-2", "command": "python -m search run", "since": 0, "token": "x"}
            s3.put_object(Bucket="bucket", Key="stale/driver.lease", Body=json.dumps(other).encode())
            # its holder stopped renewing it: stale by the store's clock
            monkeypatch.setattr(writer_lock, "age_by_store", lambda lease, now: lease_clock.STALE_S)
        won, refused = take_at_once(location, [tmp_path / f"{case}-a", tmp_path / f"{case}-b"], monkeypatch)
        try:
            assert len(won) == 1 and len(refused) == 1, (case, won, refused)
            assert f"another driver is writing this search: pid {os.getpid()} on " in refused[0]
            lease = json.loads(s3.get_object(Bucket="bucket", Key=f"{case}/driver.lease")["Body"].read())
            assert lease["token"] == won[0].me["token"]
            monkeypatch.setattr(writer_lock, "age_by_store", age_by_store)  # the winner's lease is live
            with pytest.raises(UsageError, match="another driver is writing this search"):
                WriterLock(Experiment(location, tmp_path / f"{case}-c"), "python -m search resume").acquire()
        finally:
            for lock in won:
                lock.release()
        assert f"{case}/driver.lease" not in keys(s3)  # released


def test_on_s3_a_holder_whose_lease_another_driver_overwrote_loses_it_at_its_next_renewal(
    tmp_path, s3_bucket, monkeypatch, capsys
):
    """The holder renews with If-Match: the ETag of its last write. Once another driver has written the lease, the
    store refuses the renewal: the holder stops (exit 1) naming the new holder, and writes nothing more. The
    endpoint comes from the URI's query, as pyarrow reads it."""
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    uri = f"{s3_bucket}/exp?endpoint_override={endpoint.split('://')[1]}&scheme=http"
    s3 = s3_client(uri)
    lease = {"Bucket": "bucket", "Key": "exp/driver.lease"}
    lock = WriterLock(Experiment.at(uri), "python -m search run").acquire()
    try:
        taken = lock.tag
        assert lock._renew_once() and lock.tag not in (None, taken)  # renewed: the next condition is this write
        assert lock._renew_once() and json.loads(s3.get_object(**lease)["Body"].read())["token"] == lock.me["token"]
        newcomer = {"pid": 4343, "host": "node-3", "command": "python -m search resume", "since": time.time()}
        s3.put_object(**lease, Body=json.dumps({**newcomer, "token": "theirs"}).encode())
        assert not lock._renew_once()  # the store refused the renewal: the lease is lost
        assert json.loads(s3.get_object(**lease)["Body"].read())["token"] == "theirs"
        assert lock.lost is not None and lock.lost.exit_code == 1 and "pid 4343 on node-3" in str(lock.lost)
        experiment = Experiment.at(uri)
        (experiment.local / "study.log").write_text("stale\n")
        with pytest.raises(LeaseLost):
            experiment.upload(["study.log"])
        assert "exp/study.log" not in keys(s3)
    finally:
        lock.release()
    assert json.loads(s3.get_object(**lease)["Body"].read())["token"] == "theirs"  # not deleted on release
    assert "another driver took this search over: pid 4343 on node-3" in capsys.readouterr().err


def keys(s3) -> list[str]:
    return [item["Key"] for item in s3.list_objects_v2(Bucket="bucket").get("Contents", [])]
