"""The checkpoint store of one-worker trials: real files in a real folder (pyarrow's local filesystem), no Ray."""

import json
import tempfile

import pytest

from trainables.checkpoints import COMPLETE_MARKER, CheckpointStore, epochs_to_delete


def written_checkpoint(folder, epoch: int, val_acc: float):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.pt").write_bytes(b"weights %d" % epoch)
    (folder / "state.json").write_text(json.dumps({"epoch": epoch, "metrics": {"val_acc": val_acc}}))
    return folder


def writer(epoch: int, val_acc: float):
    """What a trial hands the store: a function that writes the checkpoint's files into a folder."""
    return lambda folder: written_checkpoint(folder, epoch, val_acc)


@pytest.mark.parametrize(
    "scores, keep, latest, deleted",
    [
        ({1: 0.5, 2: 0.7, 3: 0.6}, 2, 3, [1]),
        ({1: 0.9, 2: 0.7, 3: 0.6}, 2, 3, []),  # the latest stays even when it is not among the best
        ({1: 0.9, 2: 0.7, 3: 0.6, 4: 0.8}, 2, 4, [2, 3]),
        ({1: None, 2: 0.7}, 1, 2, [1]),  # an epoch without a score ranks last
    ],
)
def test_the_best_are_kept_and_the_latest_always(scores, keep, latest, deleted):
    assert epochs_to_delete(scores, "max", keep, latest) == deleted


def test_min_mode_keeps_the_lowest():
    assert epochs_to_delete({1: 0.2, 2: 0.5, 3: 0.1}, "min", 1, 3) == [1, 2]


def test_store_keeps_the_best_in_train_layout_and_resumes_from_the_latest(tmp_path):
    run = tmp_path / "exp" / "train_abc"
    store = CheckpointStore(str(run), "val_acc", "max", keep=1)
    for epoch, acc in [(1, 0.8), (2, 0.6), (3, 0.7)]:
        path = store.save(writer(epoch, acc), epoch, acc)
        assert path == str(run / f"checkpoint_epoch_{epoch:04d}")
    assert sorted(p.name for p in run.iterdir()) == ["checkpoint_epoch_0001", "checkpoint_epoch_0003"]
    assert (run / "checkpoint_epoch_0003" / "model.pt").read_bytes() == b"weights 3"

    again = CheckpointStore(str(run), "val_acc", "max", keep=1)  # a restarted trial reads the scores back
    assert again.scores == {1: 0.8, 3: 0.7}
    with again.latest() as folder:
        assert json.loads((folder / "state.json").read_text())["epoch"] == 3


def test_a_copy_cut_short_is_never_a_checkpoint(tmp_path):
    run = tmp_path / "train_abc"
    store = CheckpointStore(str(run), "val_acc", "max", keep=2)
    store.save(writer(1, 0.5), 1, 0.5)
    cut = written_checkpoint(run / "checkpoint_epoch_0002", 2, 0.9)  # no completion marker: the copy was cut short
    assert not (cut / COMPLETE_MARKER).exists()
    with CheckpointStore(str(run), "val_acc", "max", keep=2).latest() as folder:
        assert folder.name == "checkpoint_epoch_0001"
    store.save(writer(2, 0.6), 2, 0.6)  # the rerun of epoch 2 replaces it
    assert (cut / COMPLETE_MARKER).exists()


def test_a_local_store_writes_straight_into_the_checkpoint_folder(tmp_path):
    """No staging copy in the system's temporary folder: a trial killed afterwards leaves nothing outside the store."""
    run = tmp_path / "train_abc"
    given = []
    store = CheckpointStore(str(run), "val_acc", "max", keep=2)
    store.save(lambda folder: given.append(written_checkpoint(folder, 1, 0.5)), 1, 0.5)
    assert given == [run / "checkpoint_epoch_0001"] and (given[0] / COMPLETE_MARKER).exists()


def test_a_write_that_raises_as_torch_save_does_is_named_and_never_counts(tmp_path):
    from trainables.checkpoints import CheckpointWriteFailed

    def torch_save_on_a_full_disk(folder):
        (folder / "model.pt").write_bytes(b"half")
        raise RuntimeError("[enforce fail at inline_container.cc:664] . unexpected pos 64 vs 0")

    store = CheckpointStore(str(tmp_path / "train_abc"), "val_acc", "max", keep=2)
    with pytest.raises(CheckpointWriteFailed, match=r"could not write the checkpoint of epoch 1 .*unexpected pos"):
        store.save(torch_save_on_a_full_disk, 1, 0.5)
    assert store.complete_epochs() == []


def test_an_empty_store_has_nothing_to_resume_from(tmp_path):
    with CheckpointStore(str(tmp_path / "train_x"), "val_acc", "max", keep=2).latest() as folder:
        assert folder is None


def test_store_on_s3(tmp_path, s3_bucket, monkeypatch):
    """The same on a real S3 endpoint (moto's server): what a trial on URI storage does."""
    run = f"{s3_bucket}/exp/train_abc?endpoint_override={__import__('os').environ['AWS_ENDPOINT_URL']}"
    store = CheckpointStore(run, "val_acc", "max", keep=1)
    for epoch, acc in [(1, 0.8), (2, 0.6)]:
        store.save(writer(epoch, acc), epoch, acc)
    assert CheckpointStore(run, "val_acc", "max", keep=1).complete_epochs() == [1, 2]
    staging = tmp_path / "tmp"
    staging.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(staging))  # where the upload is staged
    store.save(writer(3, 0.5), 3, 0.5)
    assert store.complete_epochs() == [1, 3] and list(staging.iterdir()) == []
    with store.latest() as folder:
        assert (folder / "model.pt").read_bytes() == b"weights 3"


class FullDisk:
    """An fsspec filesystem over a real folder whose disk is full for files named `full_for` (ENOSPC on write)."""

    def __new__(cls, full_for: str):
        import errno

        from fsspec.implementations.local import LocalFileSystem

        class Full(LocalFileSystem):
            def _open(self, path, mode="rb", **kwargs):
                if "w" in mode and path.endswith(full_for):
                    raise OSError(errno.ENOSPC, "No space left on device", path)
                return super()._open(path, mode=mode, **kwargs)

        return Full()


def test_a_checkpoint_that_cannot_be_written_fails_in_one_line_and_never_counts(tmp_path):
    import pyarrow.fs

    from trainables.checkpoints import CheckpointWriteFailed

    run = tmp_path / "exp" / "train_abc"
    store = CheckpointStore(str(run), "val_acc", "max", keep=2)
    store.save(writer(1, 0.5), 1, 0.5)
    full = CheckpointStore(
        str(run), "val_acc", "max", keep=2, fs=pyarrow.fs.PyFileSystem(pyarrow.fs.FSSpecHandler(FullDisk("model.pt")))
    )
    with pytest.raises(
        CheckpointWriteFailed,
        match=r"could not write the checkpoint of epoch 2 to .*checkpoint_epoch_0002: .*No space left",
    ):
        full.save(writer(2, 0.9), 2, 0.9)
    assert (run / "checkpoint_epoch_0002").is_dir() and not (run / "checkpoint_epoch_0002" / COMPLETE_MARKER).exists()
    assert CheckpointStore(str(run), "val_acc", "max", keep=2).complete_epochs() == [1]
    with store.latest() as latest:
        assert latest.name == "checkpoint_epoch_0001"


def torch_checkpoint(folder):
    import torch

    folder.mkdir(parents=True)
    torch.save({"w": torch.zeros(1000)}, folder / "model.pt")
    (folder / "state.json").write_text(json.dumps({"epoch": 1, "metrics": {}}))
    (folder / COMPLETE_MARKER).write_text("")
    return folder


def test_damage_names_the_file(tmp_path):
    from trainables.checkpoints import damage

    whole = torch_checkpoint(tmp_path / "whole")
    assert damage(str(whole)) is None
    cut = torch_checkpoint(tmp_path / "cut")
    data = (cut / "model.pt").read_bytes()
    (cut / "model.pt").write_bytes(data[: len(data) // 2])
    assert damage(str(cut)).startswith(f"{cut}/model.pt is damaged: cut short")
    no_state = torch_checkpoint(tmp_path / "no_state")
    (no_state / "state.json").unlink()
    assert damage(str(no_state)) == f"{no_state}/state.json is missing"
    unmarked = torch_checkpoint(tmp_path / "unmarked")
    (unmarked / COMPLETE_MARKER).unlink()
    assert "no .complete marker" in damage(str(unmarked))
    assert damage(str(tmp_path / "gone")) == f"{tmp_path / 'gone'} is missing"
