"""A refused command writes nothing, anywhere: no storage folder, no data folder, no cache, no temporary files; and a
dry run writes nothing at all when its data is there. Each case runs the real CLI entry in this process (no Ray starts)
with storage, data, $HOME (so ~/.cache) and the temporary folder all under one root, whose tree must not change."""

import gzip
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from search import samples
from search.__main__ import main
from search.commands import parse_run
from tests.conftest import REPO
from trainables.foundation.errors import UsageError
from trainables.foundation.fetching import put_in_place, staging_beside, taken_back_on_refusal

DATA_MISSING = "data.download=false"


@pytest.fixture
def root(tmp_path, monkeypatch):
    """The one folder every write of the command would land in: $HOME, the temporary folder, storage and data."""
    (tmp_path / "home").mkdir()
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.chdir(tmp_path / "home")
    return tmp_path


def tree(root: Path) -> dict[str, tuple]:
    """Every folder and file under `root`, with each file's size and modification time; but torch's own cache in the
    temporary folder (`torchinductor_<user>`, made by torch at a process's first optimizer step, the estimate's)."""
    listing = {}
    for folder, folders, files in os.walk(root):
        folders[:] = [
            name for name in folders if not (folder == str(root / "tmp") and name.startswith("torchinductor_"))
        ]
        for name in folders:
            listing[os.path.relpath(os.path.join(folder, name), root)] = ("folder",)
        for name in files:
            stat = os.lstat(os.path.join(folder, name))
            listing[os.path.relpath(os.path.join(folder, name), root)] = (stat.st_size, stat.st_mtime_ns)
    return listing


def refused(root: Path, capsys, *words: str) -> str:
    """The error line of `python -m search WORDS`, having checked it is one line, exit code 2, and no write."""
    before = tree(root)
    code = main(list(words))
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: ") and not out, (out, err)
    after = tree(root)
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    assert not changed, f"written by a refused `{' '.join(words)}`: {changed[:8]}"
    return err.strip()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_missing_data_under_a_missing_storage_folder_writes_nothing(root, capsys):
    storage, data = root / "cluster_storage" / "runs", root / "cluster_storage" / "mnist"
    line = refused(root, capsys, "run", "space=resnet_mnist", f"storage={storage}", f"data.root={data}", DATA_MISSING)
    assert line.startswith(f"error: data.root={data}: mnist is missing MNIST/raw/train-images-idx3-ubyte")
    assert "(data.download=false)" in line


def test_a_failed_download_leaves_no_data_folder(root, capsys, monkeypatch):
    """torchvision creates <root>/MNIST/raw before it downloads: the download goes to a temporary folder instead,
    removed when no mirror answers (here one on a closed local port: no network is touched)."""
    import torchvision.datasets

    monkeypatch.setattr(torchvision.datasets.MNIST, "mirrors", [f"http://127.0.0.1:{closed_port()}/"])
    data = root / "nowhere" / "mnist"
    line = refused(root, capsys, "run", "space=mlp_mnist", f"storage={root / 'runs'}", f"data.root={data}")
    assert line.startswith(f"error: data.root={data}: mnist is missing MNIST/raw/train-images-idx3-ubyte")
    assert "(not downloaded: offline, or torchvision's mirrors did not answer)" in line and "Error" not in line


def test_the_cluster_command_without_a_cluster_writes_nothing(root, capsys, mnist_root):
    """The README's cluster command with no cluster answering: refused before the experiment's folder is claimed."""
    port = closed_port()
    line = refused(
        root,
        capsys,
        *["run", "space=resnet_mnist", f"address=127.0.0.1:{port}", f"storage={root / 'cluster_storage' / 'runs'}"],
        f"data.root={mnist_root}",
    )
    assert line.startswith(f"error: address=127.0.0.1:{port}: no Ray cluster answers at ")


@pytest.mark.parametrize(
    "words, culprit",
    [
        (["optimizer=rmsprop"], "error: optimizer=rmsprop: allowed values are "),
        (["trails=3"], "error: trails: unknown key; did you mean trials?"),
        (["name=taken"], "error: name=taken: "),
        (["model.weights=nothing.pt"], "error: model.weights=nothing.pt: no such file"),
        (["address=ray://head:10001"], "error: address=ray://head:10001: Ray Client is not supported"),
    ],
)
def test_bad_input_writes_nothing(root, capsys, mnist_root, words, culprit):
    (root / "runs" / "taken").mkdir(parents=True)
    storage = root / "runs" if "name=taken" in words else root / "missing" / "runs"  # a folder a probe could create
    line = refused(root, capsys, "run", "space=cnn_mnist", f"storage={storage}", f"data.root={mnist_root}", *words)
    assert line.startswith(culprit), line


def test_unwritable_storage_writes_nothing(root, capsys, mnist_root):
    blocker = root / "a-file"
    blocker.write_text("")
    storage = blocker / "deeper" / "runs"
    line = refused(root, capsys, "run", "space=mlp_mnist", f"storage={storage}", f"data.root={mnist_root}")
    assert line == (
        f"error: storage={storage}: cannot write there: Not a directory ({blocker}); give a folder you can write to, "
        "or a URI"
    )


def an_experiment(root: Path, on_uri: bool, *words: str) -> str:
    """A search's folder as `run` leaves it before its first trial (its settings and the lock's emptied file), under
    `root/runs`: given as the folder, or as a file:// URI (whose working folder would be in ~/.cache/search)."""
    space = [word for word in words if word.startswith("space=")] or ["space=mlp_mnist"]
    words = [word for word in words if not word.startswith("space=")]
    config, _ = parse_run([*space, f"storage={root / 'runs'}", "name=old", *words])
    experiment = root / "runs" / "old"
    experiment.mkdir(parents=True)
    (experiment / "search.json").write_text(json.dumps({"run": config.to_dict()}))
    (experiment / "driver.lock").write_text("")  # as every driver leaves it: a refusal must not take the lock
    return f"file://{experiment}" if on_uri else str(experiment)


@pytest.mark.parametrize("on_uri", [False, True], ids=["folder", "uri"])
@pytest.mark.parametrize(
    "key, culprit",
    [
        ("epochs=4", "error: epochs=4: a search's epochs cannot change on resume"),
        ("trials=abc", "error: trials=abc: "),
        ("concurrency=-1", "error: concurrency=-1"),
    ],
)
def test_a_refused_resume_writes_nothing(root, capsys, mnist_root, on_uri, key, culprit):
    """Every key checked before the lock and before a URI's files are downloaded into the working folder."""
    experiment = an_experiment(root, on_uri, f"data.root={mnist_root}", "epochs=3")
    line = refused(root, capsys, "resume", experiment, key)
    assert line.startswith(culprit), line


def test_a_resume_the_lock_refuses_leaves_no_working_folder(root, capsys, mnist_root):
    """Another driver's live lease on the URI: `resume` is refused by the lock, and the working folder the lock made in
    the cache goes with the refusal (before, it stayed, holding driver.lock), as does the store-clock probe."""
    experiment = an_experiment(root, True, f"data.root={mnist_root}")
    holder = {"token": "theirs", "pid": 999999, "host": "elsewhere", "renew_s": 15, "stale_s": 60}
    (root / "runs" / "old" / "driver.lease").write_text(json.dumps(holder))
    line = refused(root, capsys, "resume", experiment, "trials=13")
    assert line.startswith(f"error: {experiment}: another driver is writing this search: pid 999999"), line


@pytest.mark.parametrize("on_uri", [False, True], ids=["folder", "uri"])
def test_resume_refuses_data_that_is_gone_before_ray_starts_writing_nothing(root, capsys, on_uri):
    """A search whose data.root has gone: `resume` says so in one line, before its lock and before Ray (before, Ray
    started and every trial failed on the missing files), and writes nothing."""
    gone = root / "moved-away"
    experiment = an_experiment(root, on_uri, f"data.root={gone}", DATA_MISSING)
    line = refused(root, capsys, "resume", experiment)
    assert line.startswith(f"error: data.root={gone}: mnist is missing"), line


@pytest.mark.parametrize("on_uri", [False, True], ids=["folder", "uri"])
def test_resume_refuses_a_model_builder_broken_since_the_search_began_before_ray_writing_nothing(root, capsys, on_uri):
    """The space's own builder, changed after the search began into one that cannot build: `resume` names it in one
    line, as `run` would, before its lock and before Ray (before, every trial failed in Ray), and writes nothing."""
    from tests.test_own_space import own_space

    space = own_space(root)
    experiment = an_experiment(root, on_uri, f"space={space}")
    space.write_text(space.read_text().replace('__file__ + ":net"', '__file__ + ":broken"'))
    line = refused(root, capsys, "resume", experiment, "trials=3")
    assert line.startswith(f"error: architecture={space}:broken: "), line


@pytest.mark.parametrize("on_uri", [False, True], ids=["folder", "uri"])
def test_a_search_another_driver_changed_after_resumes_checks_is_checked_again_under_the_lock(
    root, capsys, on_uri, monkeypatch
):
    """Between `resume`'s checks and its lock another driver grows the search and its builder breaks: `resume` checks
    again, holding the lock but before the download, and is refused in one line; nothing is written but the lock's own
    file, emptied again (a URI's working folder goes with the refusal)."""
    from search import resuming
    from tests.test_own_space import own_space

    space = own_space(root)
    experiment = an_experiment(root, on_uri, f"space={space}")
    settings = root / "runs" / "old" / "search.json"
    trials = json.loads(settings.read_text())["run"]["trials"]
    checks, after = resuming.checked, {}

    def another_driver_after(*args):
        passed = checks(*args)
        run = json.loads(settings.read_text())["run"]
        settings.write_text(json.dumps({"run": {**run, "trials": trials + 1}}))  # grown, and its builder broken
        space.write_text(space.read_text().replace('__file__ + ":net"', '__file__ + ":broken"'))
        after.update(tree(root))
        return passed

    monkeypatch.setattr(resuming, "checked", another_driver_after)
    code = main(["resume", experiment, f"trials={trials + 5}"])
    out, err = capsys.readouterr()
    assert code == 2 and not out and err.startswith(f"error: architecture={space}:broken: "), (out, err)
    lock = "runs/old/driver.lock"
    assert {**tree(root), lock: None} == {**after, lock: None} and (root / lock).read_text() == ""


def test_resume_refuses_weights_that_are_gone_before_ray_writing_nothing(root, capsys, mnist_root):
    """The weights file the search's trials start from has gone: `resume` names it in one line before Ray (before,
    every trial failed loading it)."""
    gone = root / "weights.pt"
    experiment = an_experiment(root, False, f"data.root={mnist_root}", f"model.weights={gone}")
    line = refused(root, capsys, "resume", experiment, "trials=30")
    assert line.startswith(f"error: model.weights={gone}: no such file"), line


@pytest.mark.parametrize("on_uri", [False, True], ids=["folder", "uri"])
def test_resuming_a_finished_search_with_nothing_to_train_writes_nothing(root, capsys, mnist_root, on_uri):
    """Asked nothing to train, `resume` of a finished search says where its result is: exit 0, and no lock taken,
    nothing downloaded."""
    experiment = an_experiment(root, on_uri, f"data.root={mnist_root}")
    (root / "runs" / "old" / "summary.json").write_text("{}")
    before = tree(root)
    code = main(["resume", experiment])
    out, err = capsys.readouterr()
    assert code == 0 and not err and out.startswith(f"{experiment}: this search already finished"), (out, err)
    assert tree(root) == before


def test_an_export_given_a_trial_and_bounds_takes_no_lock_and_writes_nothing(root, capsys):
    experiment = root / "runs" / "done"
    experiment.mkdir(parents=True)
    (experiment / "search.json").write_text("{}")
    (experiment / "summary.json").write_text(json.dumps({"run": {}}))  # what a read of it needs to go on
    words = ["export", str(experiment), "trial=abc", "max.params=1000", "tracking.register=digits"]
    assert refused(root, capsys, *words) == "error: give trial=ID or bounds on the objectives, not both"


@pytest.mark.parametrize("tracked", [False, True])
def test_a_dry_run_writes_nothing(root, capsys, mnist_root, tracked):
    """Nor does its check of a new MLflow store: the folder must be writable, the store is made by the run."""
    storage = root / "missing" / "runs"
    words = ["tracking=mlflow", f"tracking.uri=sqlite:///{root / 'mlflow.db'}"] if tracked else []
    before = tree(root)
    code = main(
        ["run", "space=mlp_mnist", f"storage={storage}", "name=x", f"data.root={mnist_root}", *words, "--dry-run"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines()[-1] == (
        f"dry run: nothing started, nothing written; without --dry-run this search goes to {storage}/x"
    )
    assert tree(root) == before, "a dry run whose data is there writes nothing"


def test_a_dry_run_on_the_shipped_sample_writes_only_the_sample_and_says_where(root, capsys):
    """No data.root and no MNIST in the cache (data.download=false, as offline): one short data line, the sample
    unpacked into the cache, and the dry run's last line names that folder, the only one it wrote."""
    sample = root / "home" / ".cache" / "search" / "samples" / "mnist-1"
    before = tree(root)
    code = main(["run", "space=mlp_mnist", f"storage={root / 'runs'}", "name=x", DATA_MISSING, "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        "data: no MNIST in ~/.cache/search/datasets (data.download=false); training on the MNIST sample that ships "
        "with search (8,000 digits; CC BY-SA 3.0); for real data give data.root=PATH"
    )
    assert lines[-1] == (
        f"dry run: nothing started, nothing written but the data, fetched into {sample}; without --dry-run this "
        f"search goes to {root / 'runs'}/x"
    )
    written = [root / path for path in sorted(tree(root).keys() - before.keys())]
    assert sample / "MNIST" / "raw" / "train-images-idx3-ubyte" in written
    assert all(path.is_relative_to(sample) or sample.is_relative_to(path) for path in written), written


@pytest.fixture
def offline_weights(monkeypatch):
    """torchvision's download of pretrained weights, run as it is (torch makes its folders, prints its 'Downloading:'
    line, opens its temporary file) against a closed local port: no network is touched."""
    import torch.hub

    download, port = torch.hub.download_url_to_file, closed_port()
    monkeypatch.setattr(
        torch.hub,
        "download_url_to_file",
        lambda url, *args, **kwargs: download(f"http://127.0.0.1:{port}/{url.rsplit('/', 1)[-1]}", *args, **kwargs),
    )


def test_a_refusal_after_the_sample_was_unpacked_takes_back_the_sample_and_the_weights_folder(
    root, capsys, offline_weights
):
    """resnet50_transfer offline: the shipped sample is unpacked into the cache, then the pretrained weights cannot be
    fetched (torch's hub folder made first): both are taken back, and the refusal is one line (no `data:` line, no
    torch 'Downloading:' line before it)."""
    line = refused(root, capsys, "run", "space=resnet50_transfer", f"storage={root / 'runs'}")
    assert line.startswith("error: pretrained=true: give model.weights=PATH"), line


def test_a_refused_run_spares_the_sample_another_search_unpacked_while_it_checked(
    root, capsys, monkeypatch, offline_weights
):
    """Two searches started at once on a fresh machine: while this one's checks run, the other (a process of its own)
    unpacks the shipped sample; this one trains on the same sample and is then refused (its pretrained weights cannot
    be fetched). It takes back what it made (torch's hub folder), never the sample the other search is reading."""
    import search.running.preflight

    sample = root / "home" / ".cache" / "search" / "samples" / "mnist-1"
    use_the_sample = search.running.preflight.use_the_sample

    def unpacked_meanwhile(config, dataset: str) -> bool:  # the other search's unpack, whole before this one looks
        other = "from search import samples; samples.mnist_root()"
        subprocess.run([sys.executable, "-c", other], cwd=REPO, check=True, timeout=120)
        return use_the_sample(config, dataset)

    monkeypatch.setattr(search.running.preflight, "use_the_sample", unpacked_meanwhile)
    before = tree(root)
    code = main(["run", "space=resnet50_transfer", f"storage={root / 'runs'}"])
    out, err = capsys.readouterr()
    assert code == 2 and err.startswith("error: pretrained=true: give model.weights=PATH") and not out, (out, err)
    written = [root / path for path in sorted(tree(root).keys() - before.keys())]
    assert all(path.is_relative_to(sample) or sample.is_relative_to(path) for path in written), written
    for name in samples.RAW_FILES:  # whole, as the other search unpacked it
        assert (sample / "MNIST" / "raw" / name).read_bytes() == gzip.open(samples.PACKED / f"{name}.gz").read()


def test_a_refusal_takes_back_what_it_put_in_place_and_spares_what_another_process_put(tmp_path, monkeypatch):
    """What this process fetched (the sample it unpacked, the folders it made on the way) is taken back; what another
    put in place meanwhile is not, nor the folder that holds it, though this process made that folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cache = tmp_path / "cache" / "search"
    other = cache / "experiments" / "on-s3"
    with pytest.raises(UsageError), taken_back_on_refusal():
        assert samples.mnist_root() == cache / "samples" / "mnist-1"
        other.mkdir(parents=True)  # another search's working folder, made meanwhile
        raise UsageError("refused")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "cache",
        "cache/search",
        "cache/search/experiments",
        "cache/search/experiments/on-s3",
    ]
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    theirs.write_text("the other's")
    with pytest.raises(UsageError), taken_back_on_refusal():
        with staging_beside(cache / "samples" / "mnist-1") as staging:
            (staging / "built").mkdir()
            assert put_in_place(staging / "built", cache / "samples" / "mnist-1")
            ours.write_text("ours")
            assert not put_in_place(ours, theirs) and not ours.exists()  # a file there: the other's kept
        raise UsageError("refused")
    assert theirs.read_text() == "the other's" and not (cache / "samples").exists()


def test_a_refusal_keeps_what_it_put_in_place_while_another_process_reads_it(tmp_path, monkeypatch):
    """Another search that found the sample this process unpacked reads it from then on (`fetching.hold`, a shared
    flock): this process's refusal keeps it (without the hold the sample is taken back, as the test above shows)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    reader_code = (
        "import sys; from search import samples; samples.mnist_root(); print('reading', flush=True); sys.stdin.read()"
    )
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    with pytest.raises(UsageError), taken_back_on_refusal():
        sample = samples.mnist_root()
        reader = subprocess.Popen(
            [sys.executable, "-c", reader_code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=environment,
        )
        assert reader.stdout.readline() == "reading\n"  # it found the sample and holds it
        raise UsageError("refused")
    try:
        assert (sample / "MNIST" / "raw" / "train-images-idx3-ubyte").stat().st_size == 28 * 28 * 6000 + 16
    finally:
        reader.stdin.close()
        reader.wait(timeout=60)


def test_a_warned_pin_with_a_refused_run_says_only_the_refusal(root, capsys):
    data = root / "no-data"
    line = refused(root, capsys, "run", "space=mlp_mnist", "lr=5", f"data.root={data}", DATA_MISSING)
    assert line.startswith(f"error: data.root={data}: mnist is missing"), line


def test_a_download_is_named_by_a_dry_run_and_taken_back_by_a_refusal(root, capsys, monkeypatch):
    """torchvision's download of MNIST, from a mirror on 127.0.0.1 serving the shipped digits: each file put in place
    by this process is what a dry run names as fetched, and what a refusal after it takes back, folders included."""
    import functools
    import http.server
    import threading

    import torchvision.datasets

    from trainables.data import get_dataset

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(samples.PACKED))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(torchvision.datasets.MNIST, "mirrors", [f"http://127.0.0.1:{server.server_port}/"])
        monkeypatch.setattr(torchvision.datasets.MNIST, "resources", [(f"{n}.gz", None) for n in samples.RAW_FILES])
        data = root / "fresh" / "mnist"
        code = main(["run", "space=mlp_mnist", f"storage={root / 'runs'}", "name=x", f"data.root={data}", "--dry-run"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert f"nothing written but the data, fetched into {data};" in out.splitlines()[-1], out
        before = tree(root)
        with pytest.raises(UsageError), taken_back_on_refusal():
            get_dataset("mnist").download(root / "other" / "mnist")
            assert (root / "other" / "mnist" / "MNIST" / "raw" / samples.RAW_FILES[0]).is_file()
            raise UsageError("refused after the download")
        assert tree(root) == before
    finally:
        server.shutdown()
        server.server_close()
