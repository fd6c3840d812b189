"""Image-folder datasets: layout checks and unreadable images, on real digit PNGs (the package's sample)."""

import pytest

from search import samples
from trainables.data import IMAGEFOLDER, IMAGEFOLDER_SPLIT, get_dataset
from trainables.foundation.errors import UsageError
from trainables.foundation.space import builtin_space_names, load_space

DIGITS = samples.digit_folders_root(split_by_pct=False)
CLASSES = {"ants": "0", "bees": "1"}  # two classes of the tree, named unlike their digits


@pytest.fixture
def tree(tmp_path):
    """A small train/val tree of real PNGs (symlinks into the unpacked sample), 3 per class."""
    for split in ("train", "val"):
        for name, digit in CLASSES.items():
            folder = tmp_path / "tree" / split / name
            folder.mkdir(parents=True)
            for source in sorted((DIGITS / split / digit).iterdir())[:3]:
                (folder / source.name).symlink_to(source)
    return tmp_path / "tree"


def test_real_tree_passes_and_indexes(tree):
    assert IMAGEFOLDER.check(tree, {"image_size": 32}, False, False, 0) == []
    index = IMAGEFOLDER.index(tree, {}, 0)
    assert index.class_names == ("ants", "bees") and len(index.train) == 6 and len(index.val) == 6
    assert IMAGEFOLDER.info(tree, {"image_size": 32}).num_classes == 2


def test_split_by_train_pct_is_stratified_and_seeded():
    pooled = samples.digit_folders_root(split_by_pct=True)  # 10 digit folders of 60 PNGs
    first = IMAGEFOLDER_SPLIT.index(pooled, {"train_pct": 0.8}, seed=1)
    again = IMAGEFOLDER_SPLIT.index(pooled, {"train_pct": 0.8}, seed=1)
    assert first.train == again.train and not set(first.train) & set(first.val)
    assert len(first.train) + len(first.val) == 600 and len(first.train) == 480
    assert {label for _, label in first.val} == set(range(10))


def test_empty_class_folder_is_an_error(tree):
    (tree / "train" / "wasps").mkdir()
    (tree / "val" / "wasps").mkdir()
    with pytest.raises(UsageError, match="class folder train/wasps holds no images"):
        IMAGEFOLDER.check(tree, {}, False, False, 0)


def test_one_class_is_an_error(tree):
    for path in (tree / "val" / "bees").iterdir():
        path.unlink()
    (tree / "val" / "bees").rmdir()
    with pytest.raises(UsageError, match="val/ has 1 class folder"):
        IMAGEFOLDER.check(tree, {}, False, False, 0)


def test_unreadable_image_is_reported_and_skipped_or_fails_when_strict(tree, capsys):
    broken = tree / "train" / "ants" / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff not really a jpeg")
    assert IMAGEFOLDER.check(tree, {}, False, False, 0) == [str(broken)]
    assert str(broken) in capsys.readouterr().err
    assert str(broken) not in {path for path, _ in IMAGEFOLDER.index(tree, {}, 0, skip=[str(broken)]).train}
    with pytest.raises(UsageError, match="cannot be decoded.*data.strict=true"):
        IMAGEFOLDER.check(tree, {}, False, True, 0)


def test_missing_layout_names_what_is_expected(tmp_path):
    with pytest.raises(UsageError, match="expected <root>/train/<class>/<image>"):
        IMAGEFOLDER.check(tmp_path, {}, False, False, 0)


def test_pretrained_without_weights_offline_is_a_clear_error(monkeypatch):
    """The offline branch of resolve_weights; the download itself is replaced: tests never reach the internet."""
    import trainables.models
    from search.running.preflight import resolve_weights
    from trainables.foundation.space import load_space

    def offline(architecture):
        raise OSError("network is unreachable")

    monkeypatch.setattr(trainables.models, "download_pretrained", offline)
    space = load_space("resnet50_transfer")
    with pytest.raises(UsageError, match="pretrained=true: give model.weights=PATH"):
        resolve_weights("", space, {"pretrained": True})
    with pytest.raises(UsageError, match="model.weights=/nope.pt: no such file"):
        resolve_weights("/nope.pt", space, {"pretrained": True})
    assert resolve_weights("", space, {"pretrained": False}) == ""


def test_a_class_whose_every_image_is_unreadable_is_an_error(tree):
    for image in (tree / "val" / "bees").iterdir():
        image.unlink()  # a symlink into the sample: replaced, never written through
        image.write_bytes(b"not an image")
    with pytest.raises(UsageError, match="val/bees: none of its .* images can be decoded"):
        IMAGEFOLDER.check(tree, {"image_size": 32}, download=False, strict=False, seed=0)


def test_a_test_folder_is_the_test_split_and_must_have_the_same_classes(tree):
    assert not IMAGEFOLDER.has_test_split(tree)
    for name in ("ants", "bees"):
        (tree / "test" / name).mkdir(parents=True)
        source = next((tree / "val" / name).iterdir())
        (tree / "test" / name / source.name).symlink_to(source.resolve())
    assert IMAGEFOLDER.has_test_split(tree)
    assert IMAGEFOLDER.check(tree, {"image_size": 32}, False, False, 0) == []
    assert len(IMAGEFOLDER.index(tree, {}, 0).test) == 2
    (tree / "test" / "wasps").mkdir()
    (tree / "test" / "wasps" / "w.jpg").symlink_to(source.resolve())
    with pytest.raises(UsageError, match="test/ has other class folders than train/ and val/"):
        IMAGEFOLDER.check(tree, {"image_size": 32}, False, False, 0)


FOLDER_SPACES = [name for name in builtin_space_names() if load_space(name).dataset.startswith("imagefolder")]


@pytest.mark.parametrize("name", FOLDER_SPACES)
def test_a_folder_space_feeds_its_trial_decoded_batches_of_its_classes(name):
    """What a trial of each ImageFolder space reads from the shipped digit trees (train/val/test folders, or one
    folder per class split by percent): checked as preflight checks it, then decoded, resized and normalized by the
    trial's feed. The whole chain (a search, its checkpoint, the export) runs in test_spaces_e2e.py on
    resnet50_transfer, on the same feed."""
    import torch

    from search.commands import parse_run
    from trainables.feeds import make_feed

    space = load_space(name)
    root = samples.digit_folders_root(split_by_pct=space.dataset == "imagefolder_split")
    run, space = parse_run([f"space={name}", f"data.root={root}", "image_size=64", "data.limit=16", "data.workers=0"])
    hp = {**space.constants, **run.fixed, "batch_size": 8}
    dataset = get_dataset(space.dataset)
    assert dataset.check(root, hp, download=False, strict=True, seed=run.seed) == []
    classes = dataset.info(root, hp).class_names
    assert list(classes) == [str(digit) for digit in range(10)]
    feed = make_feed(space, run, hp, rank=0, world_size=1, device="cpu")
    assert feed.steps_per_epoch() == 2
    for images, labels in (next(iter(feed.train_batches(0))), next(iter(feed.val_batches()))):
        assert images.shape[1:] == (3, 64, 64) and images.dtype == torch.float32
        assert -3 < images.mean() < 3 and images.std() > 0.1  # normalized, not raw bytes
        assert 0 <= labels.min() and labels.max() < len(classes)
    assert (space.dataset == "imagefolder") == bool(feed.test_batches())  # the test folder is the test split
