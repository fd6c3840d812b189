"""A refused command writes nothing, anywhere: no storage folder, no data folder, no cache, no temporary files; and a
dry run writes nothing at all when its data is there. Each case runs the real CLI entry in this process (no Ray starts)
with storage, data, $HOME (so ~/.cache) and the temporary folder all under one root, whose tree must not change."""

import json
import os
import socket
import tempfile
from pathlib import Path

import pytest

from search.__main__ import main
from search.commands import parse_run

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


def test_a_refused_resume_writes_nothing(root, capsys, mnist_root):
    config, _ = parse_run(["space=mlp_mnist", f"storage={root / 'runs'}", "name=old", f"data.root={mnist_root}"])
    experiment = root / "runs" / "old"
    experiment.mkdir(parents=True)
    (experiment / "search.json").write_text(json.dumps({"run": config.to_dict()}))
    (experiment / "driver.lock").write_text("")  # as every driver leaves it: a refusal must not take the lock
    line = refused(root, capsys, "resume", str(experiment), f"epochs={config.epochs + 1}")
    assert line.startswith(f"error: epochs={config.epochs + 1}: a search's epochs cannot change on resume")


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


def test_a_refusal_after_the_sample_was_unpacked_takes_back_the_sample_and_the_weights_folder(
    root, capsys, monkeypatch
):
    """resnet50_transfer offline: the shipped sample is unpacked into the cache, then the pretrained weights cannot be
    fetched (torch's hub folder made first, as torch makes it): both are taken back, and the refusal is one line (no
    `data:` line, no torch 'Downloading:' line before it)."""
    import torch.hub

    import trainables.models

    def offline(architecture: str) -> str:
        checkpoints = Path(torch.hub.get_dir()) / "checkpoints"
        checkpoints.mkdir(parents=True, exist_ok=True)
        print(f'Downloading: "https://download.pytorch.org/models/{architecture}.pth" to {checkpoints}')
        raise OSError("no network")

    monkeypatch.setattr(trainables.models, "download_pretrained", offline)
    line = refused(root, capsys, "run", "space=resnet50_transfer", f"storage={root / 'runs'}")
    assert line.startswith("error: pretrained=true: give model.weights=PATH"), line


def test_a_refusal_takes_back_what_it_fetched_and_spares_what_another_search_put_beside_it(tmp_path):
    """Two searches started at once on a fresh machine (tests/test_cluster.py submits two such jobs): the refused
    one's take-back removes the sample it unpacked and the folders it made, not the other's working folder."""
    from search.running.preflight import taken_back_on_refusal
    from trainables.foundation.errors import UsageError

    cache = tmp_path / "cache"
    sample, other = cache / "search" / "samples" / "mnist-1", cache / "search" / "experiments" / "on-s3"
    with pytest.raises(UsageError), taken_back_on_refusal([sample]):
        sample.mkdir(parents=True)
        (sample / "train-images.gz").write_text("digits")
        other.mkdir(parents=True)  # the other search's, made meanwhile
        raise UsageError("refused")
    assert not (cache / "search" / "samples").exists() and other.is_dir()
    with pytest.raises(UsageError), taken_back_on_refusal([sample]):
        sample.mkdir(parents=True)
        raise UsageError("refused")
    assert sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*")) == [
        "search",
        "search/experiments",
        "search/experiments/on-s3",
    ]


def test_a_warned_pin_with_a_refused_run_says_only_the_refusal(root, capsys):
    data = root / "no-data"
    line = refused(root, capsys, "run", "space=mlp_mnist", "lr=5", f"data.root={data}", DATA_MISSING)
    assert line.startswith(f"error: data.root={data}: mnist is missing"), line


def test_resume_refuses_data_that_is_gone_before_ray_starts(root, capsys, mnist_root):
    """A search whose data.root has gone: `resume` says so in one line and starts no trial (before, Ray started and
    every trial failed on the missing files)."""
    gone = root / "moved-away"
    config, _ = parse_run(["space=mlp_mnist", f"storage={root / 'runs'}", "name=old", f"data.root={gone}"])
    config.data.download = False
    experiment = root / "runs" / "old"
    experiment.mkdir(parents=True)
    (experiment / "search.json").write_text(json.dumps({"run": config.to_dict()}))
    code = main(["resume", str(experiment)])
    out, err = capsys.readouterr()
    assert code == 2 and err.startswith(f"error: data.root={gone}: mnist is missing"), (out, err)
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in experiment.iterdir()) == ["driver.lock", "search.json"]  # no trial, no study
