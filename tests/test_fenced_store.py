"""Ray Tune's own writes to an experiment on a URI pass the driver's fence (trainables.foundation.fenced_store): a
real lease (search.running.writer.lock) on a file:// URI, real files, pyarrow's `copy_files` as Tune's syncer calls
it; no Ray instance."""

import gzip
import json
import pickle
import subprocess
import sys

import pyarrow.fs

from search.running.writer.lock import LEASE_FILE, WriterLock
from trainables.foundation import fenced_store
from trainables.foundation.fenced_store import fenced_filesystem
from trainables.foundation.storage import Experiment

OTHER = {"pid": 4242, "host": "node-2", "command": "python -m search resume", "since": 0.0, "token": "theirs"}
IN_A_TRIAL = """
import pickle, sys
import pyarrow.fs
fs = pickle.loads(sys.stdin.buffer.read())
local = pyarrow.fs.LocalFileSystem()
pyarrow.fs.copy_files(sys.argv[1], sys.argv[2], source_filesystem=local, destination_filesystem=fs)
"""


def copy_up(staging, fs, path: str) -> None:
    """What Tune does with its driver folder on each snapshot: copies all of it to the experiment."""
    pyarrow.fs.copy_files(str(staging), path, source_filesystem=pyarrow.fs.LocalFileSystem(), destination_filesystem=fs)


def test_tunes_writes_land_while_the_driver_holds_the_lease_and_none_after_a_takeover(tmp_path, monkeypatch, capsys):
    """While this driver holds the lease, Tune's copy of its driver folder lands as it is (a .gz file not compressed
    again), reading the lease back once while that read stands, not once a trial folder. Once another driver took the
    search over, nothing more does (a fenced trial's `error.txt` written meanwhile stays off the experiment; no folder
    is made, nothing deleted) and the driver says what it saw; reads go on. After the driver's release, too, its copy
    writes nothing. Pickled into a process that holds no lease (a trial's), the filesystem fences nothing."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    experiment = tmp_path / "bucket" / "exp"
    experiment.mkdir(parents=True)
    uri = f"file://{experiment}"
    staging = tmp_path / "driver-staging"
    for trial in range(30):
        (staging / f"trial_{trial}").mkdir(parents=True)
        (staging / f"trial_{trial}" / "params.json").write_text("{}")
    (staging / "experiment_state-1.json").write_text("{}")
    (staging / "state.gz").write_bytes(gzip.compress(b"kept as it is"))
    reads, check = [], fenced_store.check_fence
    monkeypatch.setattr(fenced_store, "check_fence", lambda location: reads.append(1) or check(location))
    monkeypatch.setattr(fenced_store, "CONFIRMED_S", 3600.0)  # however slow the copy: one read-back stands for it
    lock = WriterLock(Experiment.at(uri), "python -m search run").acquire()
    try:
        fs, parent = fenced_filesystem(uri)
        target = f"{parent}/exp"
        reads.clear()
        copy_up(staging, fs, target)
        assert (experiment / "experiment_state-1.json").read_text() == "{}"
        assert len(list(experiment.glob("trial_*/params.json"))) == 30 and len(reads) == 1, len(reads)
        assert gzip.decompress((experiment / "state.gz").read_bytes()) == b"kept as it is"

        (experiment / LEASE_FILE).write_text(json.dumps({**OTHER, "renewed": 1.0}))  # another driver took it over
        monkeypatch.setattr(fenced_store, "CONFIRMED_S", 0.0)  # the takeover came after the last read-back
        (staging / "trial_a").mkdir()
        (staging / "trial_a" / "error.txt").write_text("TrialFenced: the lease is no longer its own")
        (staging / "experiment_state-1.json").write_text('{"later": true}')
        copy_up(staging, fs, target)
        fs.delete_file(f"{target}/experiment_state-1.json")
        assert not (experiment / "trial_a").exists()
        assert (experiment / "experiment_state-1.json").read_text() == "{}"
        assert lock.lost is not None and "another driver took this search over: pid 4242 on node-2" in str(lock.lost)
        assert "stopped without another write to the experiment" in capsys.readouterr().err
        with fs.open_input_stream(f"{target}/experiment_state-1.json") as stream:  # reads are not fenced
            assert stream.read() == b"{}"
    finally:
        lock.release()

    (experiment / LEASE_FILE).unlink()
    lock = WriterLock(Experiment.at(uri), "python -m search resume").acquire()
    copy_up(staging, fs, target)  # the taken-over driver's copy stays shut, whoever holds the lease now
    assert not (experiment / "trial_a").exists()
    fs, parent = fenced_filesystem(uri)
    lock.release()  # the search ended: a copy Tune finishes later must not land beside the next driver's writes
    copy_up(staging, fs, target)
    assert not (experiment / "trial_a").exists()

    trial = subprocess.run([sys.executable, "-c", IN_A_TRIAL, str(staging), target], input=pickle.dumps(fs))
    assert trial.returncode == 0 and (experiment / "trial_a" / "error.txt").exists()
