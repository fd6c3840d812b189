"""Ray Tune's own writes to an experiment on a URI pass the driver's fence (trainables.foundation.fenced_store): a
real lease (search.running.writer.lock) on a file:// URI, real files, pyarrow's `copy_files` as Tune's syncer calls
it; no Ray instance."""

import json
import pickle

import pyarrow.fs

from search.running.writer.lock import LEASE_FILE, WriterLock
from trainables.foundation.fenced_store import fenced_filesystem
from trainables.foundation.storage import Experiment

OTHER = {"pid": 4242, "host": "node-2", "command": "python -m search resume", "since": 0.0, "token": "theirs"}


def copy_up(staging, fs, path: str) -> None:
    """What Tune does with its driver folder on each snapshot: copies all of it to the experiment."""
    pyarrow.fs.copy_files(str(staging), path, source_filesystem=pyarrow.fs.LocalFileSystem(), destination_filesystem=fs)


def test_tunes_writes_land_while_the_driver_holds_the_lease_and_none_after_a_takeover(tmp_path, monkeypatch, capsys):
    """While this driver holds the lease, Tune's copy of its driver folder lands. Once another driver took the search
    over, nothing more does (a fenced trial's `error.txt` written meanwhile stays off the experiment, a deletion does
    nothing) and the driver says what it saw; reads go on. The filesystem pickles for Ray's trial processes, which hold
    no lease: there nothing is fenced."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    experiment = tmp_path / "bucket" / "exp"
    experiment.mkdir(parents=True)
    uri = f"file://{experiment}"
    staging = tmp_path / "driver-staging"
    (staging / "trial_a").mkdir(parents=True)
    (staging / "experiment_state-1.json").write_text("{}")
    lock = WriterLock(Experiment.at(uri), "python -m search run").acquire()
    try:
        fs, parent = fenced_filesystem(uri)
        target = f"{parent}/exp"
        copy_up(staging, fs, target)
        assert (experiment / "experiment_state-1.json").read_text() == "{}"

        (experiment / LEASE_FILE).write_text(json.dumps({**OTHER, "renewed": 1.0}))  # another driver took it over
        (staging / "trial_a" / "error.txt").write_text("TrialFenced: the lease is no longer its own")
        (staging / "experiment_state-1.json").write_text('{"later": true}')
        copy_up(staging, fs, target)
        fs.delete_file(f"{target}/experiment_state-1.json")
        assert not (experiment / "trial_a" / "error.txt").exists()
        assert (experiment / "experiment_state-1.json").read_text() == "{}"
        assert lock.lost is not None and "another driver took this search over: pid 4242 on node-2" in str(lock.lost)
        assert "stopped without another write to the experiment" in capsys.readouterr().err
        with fs.open_input_stream(f"{target}/experiment_state-1.json") as stream:  # reads are not fenced
            assert stream.read() == b"{}"
        in_a_trial = pickle.loads(pickle.dumps(fs))
    finally:
        lock.release()
    copy_up(staging, in_a_trial, target)  # a process that holds no lease: nothing to fence
    assert (experiment / "trial_a" / "error.txt").exists()
